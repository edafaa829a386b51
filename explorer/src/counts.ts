/** Counts by state: badges in the tree, the list above an entity's views. */
import { states } from './chart.js';
import { h } from './dom.js';
import type { TreeNode } from './model.js';

export function countBadges(n: TreeNode): HTMLElement | null {
  const r = n.entity.runtime;
  if (!r) return null;
  const badges = states
    .filter((s) => typeof r?.[s.key] === 'number' && (r[s.key] as number) > 0)
    .map((s) => h('span', { class: `count ${s.cls}`, title: s.label }, String(r[s.key]), h('span', { class: 'sr' }, ` ${s.label.toLowerCase()}`)));
  return h(
    'span',
    { class: 'counts-inline' },
    badges.length === 0 ? h('span', { class: 'count empty' }, '0', h('span', { class: 'sr' }, ' messages')) : badges,
  );
}

export function countList(n: TreeNode): HTMLElement {
  const r = n.entity.runtime;
  if (!r) return h('p', { class: 'muted' }, 'This key may not read the counts (they need Manage).');
  return h(
    'dl',
    { class: 'count-list' },
    states
      .filter((s) => typeof r?.[s.key] === 'number')
      .map((s) =>
        h(
          'div',
          { class: `count-item ${s.cls}` },
          h('dt', {}, s.label),
          h('dd', {}, s.key === 'deadLetterMessageCount' && (r[s.key] ?? 0) > 0 ? h('a', { href: `#${n.path}?dlq` }, String(r[s.key])) : String(r[s.key])),
        ),
      ),
  );
}
