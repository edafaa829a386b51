/** Sending a message with its body, properties, session and schedule; server errors at their field. */
import { ApiError, explain, type Json } from './api.js';
import { field, h, replace } from './dom.js';
import { fieldKey, type TreeNode, type ViewContext } from './model.js';

export function renderSend(ctx: ViewContext, node: TreeNode, panel: HTMLElement): void {
  const api = ctx.api;
  const fields = {
    body: field('Body', h('textarea', { rows: 6, spellcheck: 'false' }), 'JSON, or plain text when "Body is" says text.'),
    bodyKind: field('Body is', h('select', {}, h('option', { value: 'json' }, 'JSON'), h('option', { value: 'text' }, 'Text'))),
    contentType: field('Content type', h('input', { type: 'text', autocomplete: 'off' })),
    messageId: field('Message ID', h('input', { type: 'text', autocomplete: 'off' })),
    subject: field('Subject', h('input', { type: 'text', autocomplete: 'off' })),
    correlationId: field('Correlation ID', h('input', { type: 'text', autocomplete: 'off' })),
    sessionId: field('Session ID', h('input', { type: 'text', autocomplete: 'off' })),
    timeToLive: field('Time to live', h('input', { type: 'text', autocomplete: 'off', placeholder: 'PT10M' }), 'An ISO 8601 duration.'),
    scheduledEnqueueTime: field(
      'Schedule for',
      h('input', { type: 'text', autocomplete: 'off', placeholder: '2026-11-20T12:05:00Z' }),
      'An ISO 8601 instant; empty sends now.',
    ),
    applicationProperties: field(
      'Application properties',
      h('textarea', { rows: 3, spellcheck: 'false', placeholder: '{"color": "red"}' }),
      'A JSON object of strings, numbers and booleans.',
    ),
  };
  const result = h('div', { role: 'status', class: 'result' });
  const submit = async (event: Event) => {
    event.preventDefault();
    for (const f of Object.values(fields)) f.setError(null);
    const message: Record<string, Json> = {};
    const raw = fields.body.input.value;
    if (fields.bodyKind.input.value === 'json') {
      try {
        message.body = JSON.parse(raw === '' ? 'null' : raw) as Json;
      } catch (error) {
        fields.body.setError(`Not valid JSON (${(error as Error).message}); choose "Text" to send it as text.`);
        fields.body.input.focus();
        return;
      }
    } else message.body = raw;
    const props = fields.applicationProperties.input.value.trim();
    if (props) {
      try {
        message.applicationProperties = JSON.parse(props) as Json;
      } catch {
        fields.applicationProperties.setError('Not valid JSON: write an object such as {"color": "red"}.');
        fields.applicationProperties.input.focus();
        return;
      }
    }
    for (const key of ['contentType', 'messageId', 'subject', 'correlationId', 'sessionId', 'timeToLive', 'scheduledEnqueueTime'] as const) {
      const v = fields[key].input.value.trim();
      if (v) message[key] = v;
    }
    try {
      const sent = await api.send(node.path, message);
      const text = sent.sequenceNumber
        ? `Sent: sequence number ${String(sent.sequenceNumber)}, message ID ${String(sent.messageId)}.`
        : `Sent: message ID ${String(sent.messageId)}, reached ${Array.isArray(sent.subscriptions) && sent.subscriptions.length > 0 ? sent.subscriptions.join(', ') : 'no subscription'}.`;
      replace(result, h('p', { class: 'ok' }, text));
      ctx.say(text);
      await ctx.refresh();
    } catch (error) {
      const key = error instanceof ApiError ? fieldKey(error.field) : null;
      const target = key && key in fields ? fields[key as keyof typeof fields] : null;
      if (target) {
        target.setError((error as ApiError).detail);
        target.input.focus();
      } else replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
    }
  };
  replace(
    panel,
    h(
      'form',
      { class: 'grid-form', onsubmit: submit, novalidate: true },
      Object.values(fields).map((f) => f.row),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, node.kind === 'topic' ? 'Send to topic' : 'Send')),
    ),
    result,
  );
}
