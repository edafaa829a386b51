/**
 * Counts over the last hour, as sampled while this page was open: one line per state,
 * drawn as SVG elements (no markup strings, no style attributes: colours come from classes).
 */
import { h, svg } from './dom.js';

export const states = [
  { key: 'activeMessageCount', label: 'Active', cls: 'active' },
  { key: 'scheduledMessageCount', label: 'Scheduled', cls: 'scheduled' },
  { key: 'deferredMessageCount', label: 'Deferred', cls: 'deferred' },
  { key: 'deadLetterMessageCount', label: 'Dead-lettered', cls: 'dead' },
  { key: 'transferDeadLetterMessageCount', label: 'Transfer dead-lettered', cls: 'transfer' },
] as const;
export type StateKey = (typeof states)[number]['key'];

export interface Sample {
  at: number;
  counts: Partial<Record<StateKey, number>>;
}

const hourMs = 3_600_000;

/** Samples per entity path, an hour of them. */
export class History {
  private readonly samples = new Map<string, Sample[]>();
  add(path: string, sample: Sample): void {
    const list = this.samples.get(path) ?? [];
    list.push(sample);
    while (list.length > 0 && list[0]!.at < sample.at - hourMs) list.shift();
    this.samples.set(path, list);
  }
  of(path: string): Sample[] {
    return this.samples.get(path) ?? [];
  }
}

export function chart(samples: Sample[], now: number): HTMLElement {
  const width = 600;
  const height = 120;
  const present = states.filter((s) => samples.some((x) => x.counts[s.key] !== undefined));
  const max = Math.max(1, ...samples.flatMap((x) => present.map((s) => x.counts[s.key] ?? 0)));
  // From the first sample (at most an hour ago) to now: the page only knows what it saw.
  const start = Math.max(now - hourMs, Math.min(now - 60_000, samples[0]?.at ?? now));
  const x = (at: number) => ((at - start) / (now - start)) * width;
  const y = (n: number) => height - 4 - (n / max) * (height - 12);
  const last = samples[samples.length - 1];
  const summary = last
    ? `Counts over the last hour (${samples.length} samples since this page opened). Now: ${present
        .map((s) => `${s.label} ${last.counts[s.key] ?? 0}`)
        .join(', ')}.`
    : 'No samples yet.';
  const graphic = svg(
    'svg',
    { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-label': summary, preserveAspectRatio: 'none' },
    svg('line', { x1: 0, y1: height - 4, x2: width, y2: height - 4, class: 'axis' }),
    present.map((s) =>
      samples.length === 1
        ? svg('circle', { cx: x(samples[0]!.at), cy: y(samples[0]!.counts[s.key] ?? 0), r: 3, class: `series ${s.cls}` })
        : svg('polyline', {
            points: samples.map((p) => `${x(p.at).toFixed(1)},${y(p.counts[s.key] ?? 0).toFixed(1)}`).join(' '),
            class: `series ${s.cls}`,
          }),
    ),
  );
  return h(
    'figure',
    { class: 'chart-box' },
    graphic,
    h(
      'figcaption',
      {},
      h('span', { class: 'muted' }, `Since ${new Date(start).toLocaleTimeString()} (up to an hour), max ${max}: `),
      present.map((s) => h('span', { class: `legend ${s.cls}` }, s.label)),
    ),
  );
}
