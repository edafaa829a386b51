/** One message: why it was dead-lettered, its properties, and its body in the chosen view. */
import type { Message } from './api.js';
import { defaultView, renderBody, type BodyView } from './body.js';
import { h, uid } from './dom.js';

const systemProperties = [
  'sequenceNumber',
  'messageId',
  'state',
  'enqueuedTime',
  'expiresAt',
  'timeToLive',
  'deliveryCount',
  'contentType',
  'correlationId',
  'sessionId',
  'replyTo',
  'replyToSessionId',
  'subject',
  'to',
  'partitionKey',
  'scheduledEnqueueTime',
  'lockedUntil',
  'deadLetterSource',
  'enqueuedSequenceNumber',
];

export function messageDetail(
  m: Message,
  notice: string | undefined,
  actions: { cancel: (() => Promise<void>) | null; resubmit: (() => Promise<void>) | null },
): HTMLElement {
  const bodyId = uid('body');
  let view: BodyView = defaultView(m.body, m.contentType);
  const pre = h('pre', { class: 'body', id: bodyId, tabindex: '0', 'aria-label': 'Message body' });
  const draw = () => {
    pre.textContent = renderBody(m.body, m.contentType, view);
  };
  draw();
  const views = h(
    'fieldset',
    { class: 'views' },
    h('legend', {}, 'Show the body as'),
    (['json', 'text', 'hex'] as const).map((v) => {
      const id = uid('view');
      return h(
        'span',
        { class: 'radio' },
        h('input', { type: 'radio', name: bodyId, id, value: v, checked: v === view, onchange: () => ((view = v), draw()) }),
        h('label', { for: id }, v === 'json' ? 'JSON' : v === 'text' ? 'Text' : 'Hex'),
      );
    }),
  );
  const app = Object.entries(m.applicationProperties ?? {});
  const dead = m.deadLetterReason !== undefined || m.deadLetterErrorDescription !== undefined || m.deadLetterSource !== undefined;
  return h(
    'article',
    { class: 'message', 'aria-labelledby': `${bodyId}-title` },
    h('h3', { id: `${bodyId}-title`, tabindex: '-1' }, `Message ${m.sequenceNumber}`),
    notice ? h('p', { class: 'notice' }, notice) : null,
    dead
      ? h(
          'div',
          { class: 'dead-letter', role: 'note', 'aria-label': 'Why it was dead-lettered' },
          h('p', {}, h('strong', {}, 'Dead-letter reason: '), h('span', { class: 'dl-reason' }, m.deadLetterReason ?? '(none given)')),
          h('p', {}, h('strong', {}, 'Description: '), h('span', { class: 'dl-description' }, m.deadLetterErrorDescription ?? '(none given)')),
        )
      : null,
    h(
      'div',
      { class: 'message-actions' },
      actions.resubmit ? h('button', { type: 'button', class: 'primary', onclick: () => void actions.resubmit!() }, 'Resubmit this message') : null,
      actions.cancel ? h('button', { type: 'button', onclick: () => void actions.cancel!() }, 'Cancel this scheduled message') : null,
    ),
    h(
      'div',
      { class: 'props' },
      h(
        'section',
        { 'aria-label': 'System properties' },
        h('h4', {}, 'System properties'),
        h(
          'dl',
          { class: 'kv' },
          systemProperties.filter((k) => m[k] !== undefined && m[k] !== null).map((k) => [h('dt', {}, k), h('dd', {}, String(m[k]))]),
        ),
      ),
      h(
        'section',
        { 'aria-label': 'Application properties' },
        h('h4', {}, 'Application properties'),
        app.length === 0
          ? h('p', { class: 'muted' }, 'None.')
          : h(
              'dl',
              { class: 'kv' },
              app.map(([k, v]) => [h('dt', {}, k), h('dd', {}, typeof v === 'string' ? v : JSON.stringify(v))]),
            ),
      ),
    ),
    h('h4', {}, 'Body'),
    views,
    pre,
  );
}
