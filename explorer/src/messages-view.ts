/** An entity's messages: peek by subqueue, state and sequence number; detail; resubmit, purge, cancel, receive-and-delete. */
import { ApiError, entityPath, explain, type Message, type SubQueue } from './api.js';
import { confirmDialog } from './dialog.js';
import { field, h, replace } from './dom.js';
import { messageDetail } from './message.js';
import { type TreeNode, type ViewContext } from './model.js';

export function renderMessages(ctx: ViewContext, node: TreeNode, panel: HTMLElement, initial: SubQueue): void {
  const api = ctx.api;
  const source = h(
    'select',
    {},
    h('option', { value: '' }, 'Messages'),
    h('option', { value: '$deadletterqueue' }, 'Dead-letter subqueue'),
    h('option', { value: '$transferdeadletterqueue' }, 'Transfer dead-letter subqueue'),
  );
  source.value = initial;
  const stateFilter = h(
    'select',
    {},
    ['All', 'Active', 'Scheduled', 'Deferred'].map((s) => h('option', { value: s === 'All' ? '' : s }, s)),
  );
  const from = h('input', { type: 'text', inputmode: 'numeric', value: '0', autocomplete: 'off' });
  const size = h(
    'select',
    {},
    [10, 25, 50, 100].map((n) => h('option', { value: String(n) }, String(n))),
  );
  const fSource = field('Look in', source);
  const fState = field('State', stateFilter);
  const fFrom = field('From sequence number', from);
  const fSize = field('Page size', size);
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  const detail = h('div', { class: 'detail' });
  const actions = h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions on these messages' });
  const selected = new Set<string>();
  let page: Message[] = [];

  const receivePath = () => (source.value ? `${node.path}/${source.value}` : node.path);
  const sendPath = () => (node.kind === 'subscription' ? entityPath('topic', node.topic!) : node.path);

  const peek = async (fromSeq: string) => {
    fFrom.setError(null);
    if (!/^\d+$/.test(fromSeq)) {
      fFrom.setError('A sequence number is a whole number, 0 for the first message.');
      from.focus();
      return;
    }
    from.value = fromSeq;
    try {
      page = await api.peek(receivePath(), fromSeq, Number(size.value));
    } catch (error) {
      const e = error instanceof ApiError ? error : null;
      if (e?.field === 'fromSequenceNumber') fFrom.setError(e.detail);
      else replace(results, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      return;
    }
    selected.clear();
    drawResults();
    drawActions();
  };

  const drawResults = () => {
    const shown = stateFilter.value && !source.value ? page.filter((m) => m.state === stateFilter.value) : page;
    const dead = source.value !== '';
    const last = page[page.length - 1];
    const nextFrom = last ? (BigInt(last.sequenceNumber) + 1n).toString() : null;
    replace(
      results,
      h(
        'p',
        { class: 'muted' },
        page.length === 0
          ? 'No messages from this sequence number on.'
          : `${shown.length} of ${page.length} peeked message${page.length === 1 ? '' : 's'}${shown.length !== page.length ? ` (only ${stateFilter.value})` : ''}, from ${from.value}.`,
      ),
      shown.length === 0
        ? null
        : h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'messages' },
              h('caption', { class: 'sr' }, `Messages in ${receivePath()}`),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  dead ? h('th', { scope: 'col' }, h('span', { class: 'sr' }, 'Select')) : null,
                  h('th', { scope: 'col' }, 'Sequence number'),
                  h('th', { scope: 'col' }, 'Message ID'),
                  h('th', { scope: 'col' }, dead ? 'Dead-letter reason' : 'State'),
                  h('th', { scope: 'col' }, 'Enqueued'),
                  h('th', { scope: 'col', class: 'num' }, 'Deliveries'),
                ),
              ),
              h(
                'tbody',
                {},
                shown.map((m) =>
                  h(
                    'tr',
                    {},
                    dead
                      ? h(
                          'td',
                          {},
                          h('input', {
                            type: 'checkbox',
                            'aria-label': `Select message ${m.sequenceNumber}`,
                            checked: selected.has(m.sequenceNumber),
                            onchange: (event: Event) => {
                              if ((event.target as HTMLInputElement).checked) selected.add(m.sequenceNumber);
                              else selected.delete(m.sequenceNumber);
                              drawActions();
                            },
                          }),
                        )
                      : null,
                    h(
                      'td',
                      {},
                      h(
                        'button',
                        { type: 'button', class: 'link', onclick: () => showDetail(m), 'aria-label': `Show message ${m.sequenceNumber}` },
                        m.sequenceNumber,
                      ),
                    ),
                    h('td', { class: 'ellipsis' }, m.messageId ?? ''),
                    h('td', {}, dead ? (m.deadLetterReason ?? '(no reason)') : (m.state ?? '')),
                    h('td', {}, m.enqueuedTime ?? ''),
                    h('td', { class: 'num' }, String(m.deliveryCount ?? 0)),
                  ),
                ),
              ),
            ),
          ),
      h(
        'div',
        { class: 'pager' },
        h('button', { type: 'button', onclick: () => void peek('0'), disabled: from.value === '0' }, 'First page'),
        h('button', { type: 'button', onclick: () => nextFrom && void peek(nextFrom), disabled: !nextFrom || page.length < Number(size.value) }, 'Next page'),
      ),
    );
  };

  const drawActions = () => {
    const dead = source.value === '$deadletterqueue';
    replace(
      actions,
      dead
        ? [
            h(
              'button',
              {
                type: 'button',
                disabled: selected.size === 0,
                onclick: () =>
                  void act(
                    `Resubmit ${selected.size} selected`,
                    () => api.resubmit(node.path, [...selected]),
                    (n) => `Resubmitted ${n} message${n === 1 ? '' : 's'} to ${node.path}.`,
                  ),
              },
              `Resubmit selected (${selected.size})`,
            ),
            h(
              'button',
              {
                type: 'button',
                onclick: () =>
                  void act(
                    'Resubmit all',
                    () => api.resubmit(node.path),
                    (n) => `Resubmitted ${n} message${n === 1 ? '' : 's'} to ${node.path}.`,
                  ),
              },
              'Resubmit all',
            ),
          ]
        : null,
      h('button', { type: 'button', onclick: () => void receiveOne() }, 'Receive and delete one'),
      h('button', { type: 'button', class: 'danger', onclick: () => void purge() }, 'Purge…'),
    );
  };

  const act = async (what: string, run: () => Promise<number>, done: (n: number) => string) => {
    try {
      const n = await run();
      ctx.say(done(n));
      replace(detail, h('p', { class: 'ok', role: 'status' }, done(n)));
    } catch (error) {
      replace(detail, h('p', { class: 'field-error', role: 'alert' }, `${what} failed: ${explain(error)}`));
    }
    await ctx.refresh();
    await peek(from.value);
  };

  const receiveOne = async () => {
    try {
      const m = await api.receiveAndDelete(receivePath());
      if (!m) {
        replace(detail, h('p', { class: 'muted', role: 'status' }, 'No message was available to receive.'));
        return;
      }
      ctx.say(`Received and deleted message ${m.sequenceNumber}.`);
      showDetail(m, `Received and deleted: this message is no longer in ${receivePath()}.`);
    } catch (error) {
      replace(detail, h('p', { class: 'field-error', role: 'alert' }, `Receive failed: ${explain(error)}`));
    }
    await ctx.refresh();
    await peek(from.value);
  };

  const purge = async () => {
    let count: number | null = null;
    try {
      const r = (await api.get(node.path)).runtime;
      if (r) {
        count =
          source.value === '$deadletterqueue'
            ? (r.deadLetterMessageCount ?? 0)
            : source.value === '$transferdeadletterqueue'
              ? (r.transferDeadLetterMessageCount ?? 0)
              : r.activeMessageCount + r.scheduledMessageCount + (r.deferredMessageCount ?? 0);
      }
    } catch (error) {
      // Counts need Manage; purging may not. Without the count the dialog says so.
      if (!(error instanceof ApiError && error.status === 403)) {
        replace(detail, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
        return;
      }
    }
    const what = count === null ? 'all messages' : `${count} message${count === 1 ? '' : 's'}`;
    const ok = await confirmDialog(
      `Purge ${what}?`,
      count === null
        ? `Every message in ${receivePath()} will be deleted (this key may not read how many there are). This cannot be undone.`
        : `All ${what} in ${receivePath()} will be deleted. This cannot be undone.`,
      `Purge ${what}`,
    );
    if (!ok) return;
    await act(
      'Purge',
      () => api.purge(receivePath()),
      (n) => `Purged ${n} message${n === 1 ? '' : 's'} from ${receivePath()}.`,
    );
  };

  const showDetail = (m: Message, notice?: string) => {
    replace(
      detail,
      messageDetail(m, notice, {
        cancel:
          m.state === 'Scheduled' && !source.value
            ? async () => {
                try {
                  await api.cancelScheduled(sendPath(), m.sequenceNumber);
                  ctx.say(`Cancelled scheduled message ${m.sequenceNumber}.`);
                } catch (error) {
                  replace(detail, h('p', { class: 'field-error', role: 'alert' }, `Cancel failed: ${explain(error)}`));
                  return;
                }
                await ctx.refresh();
                await peek(from.value);
                replace(detail, h('p', { class: 'ok', role: 'status' }, `Cancelled scheduled message ${m.sequenceNumber}.`));
              }
            : null,
        resubmit:
          source.value === '$deadletterqueue' && !notice
            ? () =>
                act(
                  'Resubmit',
                  () => api.resubmit(node.path, [m.sequenceNumber]),
                  (n) => `Resubmitted ${n} message${n === 1 ? '' : 's'} to ${node.path}.`,
                )
            : null,
      }),
    );
    detail.querySelector<HTMLElement>('h3')?.focus();
  };

  source.addEventListener('change', () => {
    stateFilter.disabled = source.value !== '';
    replace(detail);
    void peek('0');
  });
  stateFilter.addEventListener('change', drawResults);
  stateFilter.disabled = initial !== '';
  replace(
    panel,
    h(
      'form',
      { class: 'peek-form', onsubmit: (event: Event) => (event.preventDefault(), void peek(from.value.trim())) },
      fSource.row,
      fState.row,
      fFrom.row,
      fSize.row,
      h('button', { type: 'submit', class: 'primary' }, 'Peek'),
    ),
    actions,
    results,
    detail,
  );
  drawActions();
  void peek('0');
}
