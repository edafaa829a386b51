/**
 * Sluice Explorer: the namespace tree with live counts, an entity's properties, rules and
 * authorization rules, and its messages (peek, detail, send, resubmit, purge, cancel,
 * receive-and-delete). Views are rebuilt from data with DOM APIs (dom.ts); the address
 * hash says which entity is open, so the back button and links work.
 */
import { ApiError, entityPath, explain, Sluice, type AuthorizationRule, type Entity, type EntityKind, type Json, type Message, type Rule, type SubQueue } from './api.js';
import { defaultView, renderBody, type BodyView } from './body.js';
import { chart, History, states, type StateKey } from './chart.js';
import { forgetCredentials, loadCredentials, readCredentials, saveCredentials, CredentialsError, type Credentials } from './connection.js';
import { field, h, replace, uid, type Field } from './dom.js';

const refreshMs = 5_000;

interface TreeNode {
  kind: EntityKind;
  name: string;
  topic?: string;
  path: string;
  entity: Entity;
}

interface Namespace {
  queues: TreeNode[];
  topics: { node: TreeNode; subscriptions: TreeNode[] }[];
}

const kindLabel: Record<EntityKind, string> = { queue: 'Queue', topic: 'Topic', subscription: 'Subscription' };

export class Explorer {
  private api: Sluice | null = null;
  private credentials: Credentials | null = null;
  private namespace: Namespace = { queues: [], topics: [] };
  private readonly history = new History();
  private timer: ReturnType<typeof setInterval> | null = null;
  private selected: string | null = null;
  private tab = 'messages';
  /** Redrawn in place on every refresh: the open entity's counts and chart. */
  private countsBox: HTMLElement | null = null;
  /** Redrawn in place on every refresh: the overview's table of counts. */
  private homeBox: HTMLElement | null = null;
  private treeError: string | null = null;

  constructor(
    private readonly els: { tree: HTMLElement; main: HTMLElement; session: HTMLElement; namespace: HTMLElement; status: HTMLElement },
  ) {}

  start(): void {
    window.addEventListener('hashchange', () => void this.route());
    // The address hash names the open entity, so the skip link moves focus instead.
    document.querySelector('.skip')?.addEventListener('click', (event) => {
      event.preventDefault();
      this.els.main.focus();
    });
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) void this.refresh();
    });
    this.els.namespace.textContent = location.host;
    const saved = loadCredentials();
    if (saved) void this.connect(saved, false);
    else this.showConnect();
  }

  // ---- connecting ----------------------------------------------------------------------

  private showConnect(message?: string): void {
    this.stopRefresh();
    this.api = null;
    replace(this.els.tree);
    replace(this.els.session);
    const input = h('textarea', {
      rows: 4,
      spellcheck: 'false',
      autocomplete: 'off',
      placeholder: 'Endpoint=http://127.0.0.1:4280/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=...',
    });
    const f = field('Connection string or SAS token', input, 'Paste the "Connection string:" line that npm start printed. The key stays in this tab: the page signs short-lived tokens with it and sends only those.');
    if (message) f.setError(message);
    const submit = async (event: Event) => {
      event.preventDefault();
      try {
        const credentials = readCredentials(input.value);
        await this.connect(credentials, true, f);
      } catch (error) {
        f.setError(error instanceof CredentialsError ? error.message : explain(error));
        input.focus();
      }
    };
    replace(
      this.els.main,
      h(
        'section',
        { class: 'connect', 'aria-labelledby': 'connect-title' },
        h('h2', { id: 'connect-title' }, 'Connect'),
        h('p', {}, 'See the queues, topics and subscriptions of the Sluice broker at ', h('strong', {}, location.origin), ', their messages and dead letters.'),
        h('form', { onsubmit: submit, novalidate: true }, f.row, h('button', { type: 'submit', class: 'primary' }, 'Connect')),
      ),
    );
    input.focus();
  }

  private async connect(credentials: Credentials, save: boolean, f?: Field): Promise<void> {
    const api = new Sluice(credentials);
    try {
      await this.loadNamespace(api, credentials);
    } catch (error) {
      if (f) {
        f.setError(explain(error));
        f.input.focus();
        return;
      }
      forgetCredentials();
      this.showConnect(explain(error));
      return;
    }
    if (save) saveCredentials(credentials);
    this.api = api;
    this.credentials = credentials;
    replace(
      this.els.session,
      h('span', { class: 'muted' }, 'Key: ', credentials.keyName),
      h('button', { type: 'button', onclick: () => void this.refresh(), 'aria-label': 'Refresh counts now' }, 'Refresh'),
      h('button', { type: 'button', onclick: () => this.disconnect() }, 'Disconnect'),
    );
    this.renderTree();
    this.startRefresh();
    await this.route();
  }

  private disconnect(): void {
    forgetCredentials();
    this.credentials = null;
    location.hash = '';
    this.showConnect();
  }

  // ---- the namespace and its counts ----------------------------------------------------

  private async loadNamespace(api: Sluice, credentials: Credentials): Promise<void> {
    const node = (kind: EntityKind, entity: Entity, topic?: string): TreeNode => ({
      kind,
      name: entity.name,
      ...(topic === undefined ? {} : { topic }),
      path: entityPath(kind, entity.name, topic),
      entity,
    });
    const ns: Namespace = { queues: [], topics: [] };
    const scoped = credentials.entityPath?.split('/').map(decodeURIComponent);
    if (scoped) {
      // A key for one entity cannot list the namespace: show that entity alone.
      const [collection, name, sub, subName] = scoped;
      // Reading properties and counts needs Manage; a Send or Listen key still gets the entity, without counts.
      const read = async (path: string, entityName: string): Promise<Entity> => {
        try {
          return await api.get(path);
        } catch (error) {
          if (error instanceof ApiError && error.status === 403) return { name: entityName };
          throw error;
        }
      };
      if (collection === 'queues' && name) ns.queues.push(node('queue', await read(entityPath('queue', name), name)));
      else if (collection === 'topics' && name) {
        const subscriptions = sub === 'subscriptions' && subName ? [node('subscription', await read(entityPath('subscription', subName, name), subName), name)] : [];
        const topic = subscriptions.length > 0 ? node('topic', { name }) : node('topic', await read(entityPath('topic', name), name));
        ns.topics.push({ node: topic, subscriptions });
      }
    } else {
      const [queues, topics] = await Promise.all([api.queues(), api.topics()]);
      ns.queues = queues.map((q) => node('queue', q));
      ns.topics = await Promise.all(
        topics.map(async (t) => ({ node: node('topic', t), subscriptions: (await api.subscriptions(t.name)).map((s) => node('subscription', s, t.name)) })),
      );
    }
    const now = Date.now();
    for (const n of allNodes(ns)) {
      const counts: Partial<Record<StateKey, number>> = {};
      for (const s of states) {
        const v = n.entity.runtime?.[s.key];
        if (typeof v === 'number') counts[s.key] = v;
      }
      this.history.add(n.path, { at: now, counts });
    }
    this.namespace = ns;
  }

  private startRefresh(): void {
    this.stopRefresh();
    this.timer = setInterval(() => {
      if (!document.hidden) void this.refresh();
    }, refreshMs);
  }

  private stopRefresh(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async refresh(): Promise<void> {
    if (!this.api || !this.credentials) return;
    try {
      await this.loadNamespace(this.api, this.credentials);
      this.treeError = null;
    } catch (error) {
      this.treeError = explain(error);
      if (error instanceof ApiError && error.status === 401) {
        forgetCredentials();
        this.showConnect(explain(error));
        return;
      }
    }
    this.renderTree();
    this.renderCounts();
    this.renderHomeTable();
  }

  private find(path: string | null): TreeNode | undefined {
    return allNodes(this.namespace).find((n) => n.path === path);
  }

  private renderTree(): void {
    const focused = document.activeElement instanceof HTMLElement && this.els.tree.contains(document.activeElement) ? document.activeElement.dataset.path : undefined;
    const link = (n: TreeNode) =>
      h(
        'a',
        { href: `#${n.path}`, 'data-path': n.path, 'aria-current': n.path === this.selected ? 'page' : null, class: 'tree-link' },
        h('span', { class: 'tree-name' }, h('span', { class: 'sr' }, `${kindLabel[n.kind]} `), n.name),
        countBadges(n),
      );
    const { queues, topics } = this.namespace;
    replace(
      this.els.tree,
      h('a', { href: '#', class: 'tree-home', 'aria-current': this.selected === null ? 'page' : null, 'data-path': '' }, 'Namespace overview'),
      this.treeError ? h('p', { class: 'field-error', role: 'alert' }, this.treeError) : null,
      h('h2', { id: 'tree-queues' }, 'Queues'),
      queues.length === 0 ? h('p', { class: 'muted' }, 'No queues yet.') : h('ul', { 'aria-labelledby': 'tree-queues' }, queues.map((q) => h('li', {}, link(q)))),
      h('h2', { id: 'tree-topics' }, 'Topics'),
      topics.length === 0
        ? h('p', { class: 'muted' }, 'No topics yet.')
        : h(
            'ul',
            { 'aria-labelledby': 'tree-topics' },
            topics.map((t) =>
              h(
                'li',
                {},
                link(t.node),
                t.subscriptions.length > 0
                  ? h('ul', { 'aria-label': `Subscriptions of ${t.node.name}` }, t.subscriptions.map((s) => h('li', {}, link(s))))
                  : null,
              ),
            ),
          ),
    );
    if (focused !== undefined) this.els.tree.querySelector<HTMLElement>(`[data-path="${CSS.escape(focused)}"]`)?.focus();
  }

  private renderCounts(): void {
    if (!this.countsBox) return;
    const n = this.find(this.selected);
    if (!n) return;
    replace(this.countsBox, countList(n), chart(this.history.of(n.path), Date.now()));
  }

  // ---- routing ---------------------------------------------------------------------------

  private async route(): Promise<void> {
    if (!this.api) return;
    const raw = location.hash.replace(/^#/, '');
    const [path, query] = raw.split('?') as [string, string | undefined];
    this.selected = path === '' ? null : path;
    if (query === 'dlq') this.tab = 'messages';
    this.renderTree();
    this.countsBox = null;
    this.homeBox = null;
    const node = this.find(this.selected);
    if (!node) {
      this.renderHome(this.selected === null ? null : `Nothing called ${this.selected} in this namespace.`);
      return;
    }
    this.renderEntity(node, query === 'dlq' ? '$deadletterqueue' : '');
  }

  private sayTimer: ReturnType<typeof setTimeout> | undefined;
  private say(message: string): void {
    this.els.status.textContent = message;
    clearTimeout(this.sayTimer);
    this.sayTimer = setTimeout(() => (this.els.status.textContent = ''), 15_000);
  }

  // ---- the namespace overview -------------------------------------------------------------

  private renderHomeTable(): void {
    if (!this.homeBox) return;
    const rows = allNodes(this.namespace).filter((n) => n.kind !== 'topic');
    const cell = (n: TreeNode, key: StateKey) => {
      const v = n.entity.runtime?.[key];
      if (key === 'deadLetterMessageCount' && typeof v === 'number' && v > 0) {
        return h('td', { class: 'num dead' }, h('a', { href: `#${n.path}?dlq` }, String(v), h('span', { class: 'sr' }, ' dead-lettered: open them')));
      }
      return h('td', { class: 'num' }, v === undefined ? '–' : String(v));
    };
    replace(
      this.homeBox,
      h(
        'table',
        {},
        h('caption', {}, 'Messages by state in each queue and subscription'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Entity'), states.map((s) => h('th', { scope: 'col', class: 'num' }, s.label)))),
        h(
          'tbody',
          {},
          rows.length === 0
            ? h('tr', {}, h('td', { colspan: states.length + 1, class: 'muted' }, 'No queues or subscriptions yet: create one below.'))
            : rows.map((n) => h('tr', {}, h('th', { scope: 'row' }, h('a', { href: `#${n.path}` }, displayPath(n))), states.map((s) => cell(n, s.key)))),
        ),
      ),
    );
  }

  private renderHome(notice: string | null): void {
    const api = this.api!;
    this.homeBox = h('div', { class: 'table-wrap' });
    const table = this.homeBox;
    this.renderHomeTable();
    const create = (kind: 'queue' | 'topic') => {
      const name = h('input', { type: 'text', autocomplete: 'off', required: true });
      const f = field(`New ${kind} name`, name);
      return h(
        'form',
        {
          class: 'inline-form',
          onsubmit: async (event: Event) => {
            event.preventDefault();
            f.setError(null);
            try {
              const path = entityPath(kind, name.value.trim());
              await api.put(path, {});
              await this.refresh();
              this.say(`Created ${kind} ${name.value.trim()}`);
              location.hash = `#${path}`;
            } catch (error) {
              f.setError(explain(error));
              name.focus();
            }
          },
        },
        f.row,
        h('button', { type: 'submit' }, `Create ${kind}`),
      );
    };
    const auth = h('section', { 'aria-labelledby': 'ns-auth' }, h('h2', { id: 'ns-auth' }, 'Namespace authorization rules'));
    replace(
      this.els.main,
      h('h2', {}, 'Namespace ', location.host),
      notice ? h('p', { class: 'notice', role: 'alert' }, notice) : null,
      h('p', { class: 'muted' }, 'Counts refresh every few seconds. A dead-lettered count opens those messages: pick one to see why it died, then resubmit it.'),
      table,
      h('section', { class: 'create', 'aria-label': 'Create entities' }, create('queue'), create('topic')),
      this.credentials?.entityPath ? null : auth,
    );
    if (!this.credentials?.entityPath) void this.renderAuthorization(auth, '');
  }

  // ---- one entity ----------------------------------------------------------------------------

  private renderEntity(node: TreeNode, subQueue: SubQueue): void {
    const tabs: [string, string][] = [];
    if (node.kind !== 'topic') tabs.push(['messages', 'Messages']);
    if (node.kind !== 'subscription') tabs.push(['send', 'Send']);
    tabs.push(['properties', 'Properties']);
    if (node.kind === 'subscription') tabs.push(['rules', 'Rules']);
    if (node.kind === 'topic') tabs.push(['subscriptions', 'Subscriptions']);
    if (node.kind !== 'subscription') tabs.push(['authorization', 'Authorization']);
    if (!tabs.some(([id]) => id === this.tab)) this.tab = tabs[0]![0];

    this.countsBox = h('div', { class: 'counts' });
    const panel = h('section', { role: 'tabpanel', class: 'panel', tabindex: '0' });
    const buttons = tabs.map(([id, label]) =>
      h(
        'button',
        {
          type: 'button',
          role: 'tab',
          id: `tab-${id}`,
          'aria-controls': 'entity-panel',
          'aria-selected': id === this.tab ? 'true' : 'false',
          tabindex: id === this.tab ? '0' : '-1',
          onclick: () => select(id),
          onkeydown: (event: Event) => {
            const key = (event as KeyboardEvent).key;
            const i = tabs.findIndex(([t]) => t === this.tab);
            const next = key === 'ArrowRight' ? i + 1 : key === 'ArrowLeft' ? i - 1 : key === 'Home' ? 0 : key === 'End' ? tabs.length - 1 : null;
            if (next === null) return;
            event.preventDefault();
            select(tabs[(next + tabs.length) % tabs.length]![0]);
            tabList.querySelector<HTMLElement>(`#tab-${this.tab}`)?.focus();
          },
        },
        label,
      ),
    );
    const tabList = h('div', { role: 'tablist', 'aria-label': `${displayPath(node)} views`, class: 'tabs' }, buttons);
    panel.id = 'entity-panel';
    const select = (id: string) => {
      this.tab = id;
      for (const b of buttons) {
        const on = b.id === `tab-${id}`;
        b.setAttribute('aria-selected', on ? 'true' : 'false');
        b.tabIndex = on ? 0 : -1;
      }
      panel.setAttribute('aria-labelledby', `tab-${id}`);
      this.renderTab(node, id, panel, subQueue);
    };
    replace(
      this.els.main,
      h('h2', { class: 'entity-title' }, h('span', { class: 'kind' }, kindLabel[node.kind]), ' ', displayPath(node)),
      this.countsBox,
      tabList,
      panel,
    );
    this.renderCounts();
    select(this.tab);
  }

  private renderTab(node: TreeNode, tab: string, panel: HTMLElement, subQueue: SubQueue): void {
    replace(panel);
    if (tab === 'messages') this.renderMessages(node, panel, subQueue);
    else if (tab === 'send') this.renderSend(node, panel);
    else if (tab === 'properties') void this.renderProperties(node, panel);
    else if (tab === 'rules') void this.renderRules(node, panel);
    else if (tab === 'subscriptions') this.renderSubscriptions(node, panel);
    else if (tab === 'authorization') void this.renderAuthorization(panel, node.path);
  }

  // ---- messages -------------------------------------------------------------------------------

  private renderMessages(node: TreeNode, panel: HTMLElement, initial: SubQueue): void {
    const api = this.api!;
    const source = h(
      'select',
      {},
      h('option', { value: '' }, 'Messages'),
      h('option', { value: '$deadletterqueue' }, 'Dead-letter subqueue'),
      h('option', { value: '$transferdeadletterqueue' }, 'Transfer dead-letter subqueue'),
    );
    source.value = initial;
    const stateFilter = h('select', {}, ['All', 'Active', 'Scheduled', 'Deferred'].map((s) => h('option', { value: s === 'All' ? '' : s }, s)));
    const from = h('input', { type: 'text', inputmode: 'numeric', value: '0', autocomplete: 'off' });
    const size = h('select', {}, [10, 25, 50, 100].map((n) => h('option', { value: String(n) }, String(n))));
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
                      h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => showDetail(m), 'aria-label': `Show message ${m.sequenceNumber}` }, m.sequenceNumber)),
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
              h('button', { type: 'button', disabled: selected.size === 0, onclick: () => void act(`Resubmit ${selected.size} selected`, () => api.resubmit(node.path, [...selected]), (n) => `Resubmitted ${n} message${n === 1 ? '' : 's'} to ${node.path}.`) }, `Resubmit selected (${selected.size})`),
              h('button', { type: 'button', onclick: () => void act('Resubmit all', () => api.resubmit(node.path), (n) => `Resubmitted ${n} message${n === 1 ? '' : 's'} to ${node.path}.`) }, 'Resubmit all'),
            ]
          : null,
        h('button', { type: 'button', onclick: () => void receiveOne() }, 'Receive and delete one'),
        h('button', { type: 'button', class: 'danger', onclick: () => void purge() }, 'Purge…'),
      );
    };

    const act = async (what: string, run: () => Promise<number>, done: (n: number) => string) => {
      try {
        const n = await run();
        this.say(done(n));
        replace(detail, h('p', { class: 'ok', role: 'status' }, done(n)));
      } catch (error) {
        replace(detail, h('p', { class: 'field-error', role: 'alert' }, `${what} failed: ${explain(error)}`));
      }
      await this.refresh();
      await peek(from.value);
    };

    const receiveOne = async () => {
      try {
        const m = await api.receiveAndDelete(receivePath());
        if (!m) {
          replace(detail, h('p', { class: 'muted', role: 'status' }, 'No message was available to receive.'));
          return;
        }
        this.say(`Received and deleted message ${m.sequenceNumber}.`);
        showDetail(m, `Received and deleted: this message is no longer in ${receivePath()}.`);
      } catch (error) {
        replace(detail, h('p', { class: 'field-error', role: 'alert' }, `Receive failed: ${explain(error)}`));
      }
      await this.refresh();
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
      await act('Purge', () => api.purge(receivePath()), (n) => `Purged ${n} message${n === 1 ? '' : 's'} from ${receivePath()}.`);
    };

    const showDetail = (m: Message, notice?: string) => {
      replace(detail, messageDetail(m, notice, {
        cancel: m.state === 'Scheduled' && !source.value
          ? async () => {
              try {
                await api.cancelScheduled(sendPath(), m.sequenceNumber);
                this.say(`Cancelled scheduled message ${m.sequenceNumber}.`);
              } catch (error) {
                replace(detail, h('p', { class: 'field-error', role: 'alert' }, `Cancel failed: ${explain(error)}`));
                return;
              }
              await this.refresh();
              await peek(from.value);
              replace(detail, h('p', { class: 'ok', role: 'status' }, `Cancelled scheduled message ${m.sequenceNumber}.`));
            }
          : null,
        resubmit: source.value === '$deadletterqueue' && !notice
          ? () => act('Resubmit', () => api.resubmit(node.path, [m.sequenceNumber]), (n) => `Resubmitted ${n} message${n === 1 ? '' : 's'} to ${node.path}.`)
          : null,
      }));
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

  // ---- sending ----------------------------------------------------------------------------------

  private renderSend(node: TreeNode, panel: HTMLElement): void {
    const api = this.api!;
    const fields = {
      body: field('Body', h('textarea', { rows: 6, spellcheck: 'false' }), 'JSON, or plain text when "Body is" says text.'),
      bodyKind: field('Body is', h('select', {}, h('option', { value: 'json' }, 'JSON'), h('option', { value: 'text' }, 'Text'))),
      contentType: field('Content type', h('input', { type: 'text', autocomplete: 'off' })),
      messageId: field('Message ID', h('input', { type: 'text', autocomplete: 'off' })),
      subject: field('Subject', h('input', { type: 'text', autocomplete: 'off' })),
      correlationId: field('Correlation ID', h('input', { type: 'text', autocomplete: 'off' })),
      sessionId: field('Session ID', h('input', { type: 'text', autocomplete: 'off' })),
      timeToLive: field('Time to live', h('input', { type: 'text', autocomplete: 'off', placeholder: 'PT10M' }), 'An ISO 8601 duration.'),
      scheduledEnqueueTime: field('Schedule for', h('input', { type: 'text', autocomplete: 'off', placeholder: '2026-11-20T12:05:00Z' }), 'An ISO 8601 instant; empty sends now.'),
      applicationProperties: field('Application properties', h('textarea', { rows: 3, spellcheck: 'false', placeholder: '{"color": "red"}' }), 'A JSON object of strings, numbers and booleans.'),
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
        this.say(text);
        await this.refresh();
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

  // ---- properties ---------------------------------------------------------------------------------

  private async renderProperties(node: TreeNode, panel: HTMLElement): Promise<void> {
    const api = this.api!;
    let entity: Entity;
    try {
      entity = await api.get(node.path);
    } catch (error) {
      replace(panel, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      return;
    }
    const editable = Object.entries(entity).filter(([k]) => !['name', 'topicName', 'runtime'].includes(k)) as [string, Json][];
    const fields = new Map<string, { f: Field; original: Json }>();
    for (const [key, value] of editable) {
      let input: HTMLInputElement | HTMLSelectElement;
      if (key === 'status') {
        input = h('select', {}, ['Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled'].map((s) => h('option', { value: s }, s)));
        input.value = String(value);
      } else if (typeof value === 'boolean') input = h('input', { type: 'checkbox', checked: value });
      else if (typeof value === 'number') input = h('input', { type: 'number', value: String(value) });
      else input = h('input', { type: 'text', value: value === null ? '' : String(value), autocomplete: 'off', placeholder: value === null ? 'not set' : null });
      fields.set(key, { f: field(humanize(key), input), original: value });
    }
    const result = h('div', { role: 'status', class: 'result' });
    const read = (key: string, f: Field, original: Json): Json => {
      const input = f.input as HTMLInputElement;
      if (input.type === 'checkbox') return input.checked;
      if (input.type === 'number') return input.value === '' ? null : Number(input.value);
      return input.value.trim() === '' && original === null ? null : input.value.trim() === '' ? null : input.value.trim();
    };
    const save = async (event: Event) => {
      event.preventDefault();
      const changes: Record<string, Json> = {};
      for (const [key, { f, original }] of fields) {
        f.setError(null);
        const v = read(key, f, original);
        if (v !== original) changes[key] = v;
      }
      if (Object.keys(changes).length === 0) {
        replace(result, h('p', { class: 'muted' }, 'Nothing changed.'));
        return;
      }
      try {
        await api.put(node.path, changes);
        replace(result, h('p', { class: 'ok' }, `Saved ${Object.keys(changes).join(', ')}.`));
        this.say(`Saved the properties of ${displayPath(node)}.`);
        await this.refresh();
        void this.renderProperties(node, panel);
      } catch (error) {
        const key = error instanceof ApiError ? fieldKey(error.field) : null;
        const target = key ? fields.get(key) : undefined;
        if (target) {
          target.f.setError((error as ApiError).detail);
          target.f.input.focus();
        } else replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      }
    };
    const remove = async () => {
      if (!(await confirmDialog(`Delete ${displayPath(node)}?`, `The ${node.kind} and every message in it are deleted. This cannot be undone.`, `Delete ${node.kind}`))) return;
      try {
        await api.remove(node.path);
        this.say(`Deleted ${displayPath(node)}.`);
        await this.refresh();
        location.hash = '';
      } catch (error) {
        replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      }
    };
    replace(
      panel,
      h(
        'form',
        { class: 'grid-form', onsubmit: save, novalidate: true },
        [...fields.values()].map(({ f }) => f.row),
        h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save changes'), h('button', { type: 'button', class: 'danger', onclick: () => void remove() }, `Delete ${node.kind}`)),
      ),
      result,
      h('p', { class: 'muted' }, `Created ${entity.runtime?.createdAt ?? '?'}, updated ${entity.runtime?.updatedAt ?? '?'}, last used ${entity.runtime?.accessedAt ?? '?'}.`),
    );
  }

  // ---- subscription rules ----------------------------------------------------------------------------

  private async renderRules(node: TreeNode, panel: HTMLElement): Promise<void> {
    const api = this.api!;
    let rules: Rule[];
    try {
      rules = await api.rules(node.path);
    } catch (error) {
      replace(panel, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      return;
    }
    const reload = () => void this.renderRules(node, panel);
    replace(
      panel,
      h('p', { class: 'muted' }, 'A message reaches this subscription when any rule\'s filter matches; that rule\'s action then changes its properties.'),
      rules.map((r) => ruleEditor(api, node, r, reload, (m) => this.say(m))),
      h('h3', {}, 'Add a rule'),
      ruleEditor(api, node, null, reload, (m) => this.say(m)),
    );
  }

  private renderSubscriptions(node: TreeNode, panel: HTMLElement): void {
    const api = this.api!;
    const subs = this.namespace.topics.find((t) => t.node.path === node.path)?.subscriptions ?? [];
    const name = h('input', { type: 'text', autocomplete: 'off' });
    const f = field('New subscription name', name);
    replace(
      panel,
      subs.length === 0 ? h('p', { class: 'muted' }, 'No subscriptions: messages sent to this topic reach nobody.') : h('ul', {}, subs.map((s) => h('li', {}, h('a', { href: `#${s.path}` }, s.name)))),
      h(
        'form',
        {
          class: 'inline-form',
          onsubmit: async (event: Event) => {
            event.preventDefault();
            f.setError(null);
            try {
              const path = entityPath('subscription', name.value.trim(), node.name);
              await api.put(path, {});
              await this.refresh();
              location.hash = `#${path}`;
            } catch (error) {
              f.setError(explain(error));
              name.focus();
            }
          },
        },
        f.row,
        h('button', { type: 'submit' }, 'Create subscription'),
      ),
    );
  }

  // ---- authorization rules ---------------------------------------------------------------------------

  private async renderAuthorization(container: HTMLElement, path: string): Promise<void> {
    const api = this.api!;
    const body = h('div', {});
    const heading = container.firstElementChild;
    replace(container, heading, body);
    let rules: AuthorizationRule[];
    try {
      rules = await api.authorizationRules(path);
    } catch (error) {
      replace(body, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      return;
    }
    const reload = () => void this.renderAuthorization(container, path);
    const result = h('div', { role: 'status', class: 'result' });
    const run = async (what: string, action: () => Promise<unknown>) => {
      try {
        await action();
        this.say(what);
        reload();
      } catch (error) {
        replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
      }
    };
    const secret = (label: string, value: string | undefined) => {
      if (!value) return h('td', {}, '–');
      const out = h('code', {}, '••••••••');
      const toggle = h('button', {
        type: 'button',
        class: 'link',
        'aria-label': `Show ${label}`,
        onclick: () => {
          const showing = out.textContent !== '••••••••';
          out.textContent = showing ? '••••••••' : value;
          toggle.textContent = showing ? 'Show' : 'Hide';
          toggle.setAttribute('aria-label', `${showing ? 'Show' : 'Hide'} ${label}`);
        },
      }, 'Show');
      return h('td', {}, out, ' ', toggle);
    };
    const name = h('input', { type: 'text', autocomplete: 'off' });
    const fName = field('Rule name', name);
    const rights = ['Manage', 'Send', 'Listen'].map((r) => field(r, h('input', { type: 'checkbox', value: r })));
    replace(
      body,
      rules.length === 0
        ? h('p', { class: 'muted' }, 'No rules here: keys for this entity come from the namespace rules.')
        : h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              {},
              h('thead', {}, h('tr', {}, ['Key name', 'Rights', 'Primary key', 'Secondary key', 'Actions'].map((t) => h('th', { scope: 'col' }, t)))),
              h(
                'tbody',
                {},
                rules.map((r) =>
                  h(
                    'tr',
                    {},
                    h('th', { scope: 'row' }, r.keyName),
                    h('td', {}, r.rights.join(', ')),
                    secret(`primary key of ${r.keyName}`, r.primaryKey),
                    secret(`secondary key of ${r.keyName}`, r.secondaryKey),
                    h(
                      'td',
                      {},
                      h(
                      'div',
                      { class: 'row-actions' },
                      h('button', { type: 'button', onclick: () => void run(`Regenerated the primary key of ${r.keyName}.`, () => api.regenerateKey(path, r.keyName, 'primary')) }, 'New primary key'),
                      h('button', { type: 'button', onclick: () => void run(`Regenerated the secondary key of ${r.keyName}.`, () => api.regenerateKey(path, r.keyName, 'secondary')) }, 'New secondary key'),
                      r.keyName === 'RootManageSharedAccessKey'
                        ? null
                        : h(
                            'button',
                            {
                              type: 'button',
                              class: 'danger',
                              onclick: async () => {
                                if (await confirmDialog(`Delete ${r.keyName}?`, `Every token signed with its keys stops working.`, 'Delete rule')) {
                                  await run(`Deleted ${r.keyName}.`, () => api.removeAuthorizationRule(path, r.keyName));
                                }
                              },
                            },
                            'Delete',
                          ),
                      ),
                    ),
                  ),
                ),
              ),
            ),
          ),
      result,
      h(
        'form',
        {
          class: 'inline-form',
          novalidate: true,
          onsubmit: async (event: Event) => {
            event.preventDefault();
            fName.setError(null);
            const chosen = rights.filter((r) => (r.input as HTMLInputElement).checked).map((r) => r.input.value);
            try {
              await api.putAuthorizationRule(path, name.value.trim(), chosen);
              this.say(`Saved rule ${name.value.trim()}.`);
              reload();
            } catch (error) {
              fName.setError(explain(error));
              name.focus();
            }
          },
        },
        fName.row,
        h('fieldset', { class: 'rights' }, h('legend', {}, 'Rights'), rights.map((r) => r.row)),
        h('button', { type: 'submit' }, 'Add or replace rule'),
      ),
    );
  }
}

// ---- pieces ---------------------------------------------------------------------------------------

function allNodes(ns: Namespace): TreeNode[] {
  return [...ns.queues, ...ns.topics.flatMap((t) => [t.node, ...t.subscriptions])];
}

function displayPath(n: TreeNode): string {
  return n.kind === 'subscription' ? `${n.topic}/${n.name}` : n.name;
}

function countBadges(n: TreeNode): HTMLElement | null {
  const r = n.entity.runtime;
  if (!r) return null;
  const badges = states
    .filter((s) => typeof r?.[s.key] === 'number' && (r[s.key] as number) > 0)
    .map((s) => h('span', { class: `count ${s.cls}`, title: s.label }, String(r[s.key]), h('span', { class: 'sr' }, ` ${s.label.toLowerCase()}`)));
  return h('span', { class: 'counts-inline' }, badges.length === 0 ? h('span', { class: 'count empty' }, '0', h('span', { class: 'sr' }, ' messages')) : badges);
}

function countList(n: TreeNode): HTMLElement {
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

function humanize(key: string): string {
  return key.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());
}

/** `applicationProperties.color` → `applicationProperties`; `filter.sql` stays whole for rules. */
function fieldKey(path: string | null): string | null {
  return path ? (path.split(/[.[]/)[0] ?? null) : null;
}

const systemProperties = [
  'sequenceNumber', 'messageId', 'state', 'enqueuedTime', 'expiresAt', 'timeToLive', 'deliveryCount', 'contentType', 'correlationId',
  'sessionId', 'replyTo', 'replyToSessionId', 'subject', 'to', 'partitionKey', 'scheduledEnqueueTime', 'lockedUntil', 'deadLetterSource', 'enqueuedSequenceNumber',
];

function messageDetail(m: Message, notice: string | undefined, actions: { cancel: (() => Promise<void>) | null; resubmit: (() => Promise<void>) | null }): HTMLElement {
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
    h('div', { class: 'message-actions' },
      actions.resubmit ? h('button', { type: 'button', class: 'primary', onclick: () => void actions.resubmit!() }, 'Resubmit this message') : null,
      actions.cancel ? h('button', { type: 'button', onclick: () => void actions.cancel!() }, 'Cancel this scheduled message') : null,
    ),
    h('div', { class: 'props' },
      h('section', { 'aria-label': 'System properties' }, h('h4', {}, 'System properties'),
        h('dl', { class: 'kv' }, systemProperties.filter((k) => m[k] !== undefined && m[k] !== null).map((k) => [h('dt', {}, k), h('dd', {}, String(m[k]))]))),
      h('section', { 'aria-label': 'Application properties' }, h('h4', {}, 'Application properties'),
        app.length === 0 ? h('p', { class: 'muted' }, 'None.') : h('dl', { class: 'kv' }, app.map(([k, v]) => [h('dt', {}, k), h('dd', {}, typeof v === 'string' ? v : JSON.stringify(v))]))),
    ),
    h('h4', {}, 'Body'),
    views,
    pre,
  );
}

function sqlOf(filter: Record<string, Json> | null | undefined): string {
  const sql = filter?.sql;
  return typeof sql === 'string' ? sql : '';
}

function ruleEditor(api: Sluice, node: TreeNode, rule: Rule | null, reload: () => void, say: (m: string) => void): HTMLElement {
  const kind = rule ? (Object.keys(rule.filter)[0] ?? 'true') : 'sql';
  const name = h('input', { type: 'text', autocomplete: 'off', value: rule?.name ?? '' });
  const filterKind = h('select', {}, h('option', { value: 'sql' }, 'SQL filter'), h('option', { value: 'correlation' }, 'Correlation filter (JSON)'), h('option', { value: 'true' }, 'Match all (true)'), h('option', { value: 'false' }, 'Match none (false)'));
  filterKind.value = kind;
  const filterText = h('textarea', { rows: 3, spellcheck: 'false', class: 'code', value: kind === 'sql' ? sqlOf(rule?.filter) : kind === 'correlation' ? JSON.stringify(rule?.filter.correlation ?? {}, null, 2) : '' });
  const actionText = h('textarea', { rows: 2, spellcheck: 'false', class: 'code', value: rule?.action?.sql ?? '', placeholder: "SET priority = 'high'" });
  const fName = field('Rule name', name);
  const fKind = field('Filter', filterKind);
  const fFilter = field('Filter expression', filterText, 'SQL such as color = \'red\' AND sys.label LIKE \'a%\'; JSON for a correlation filter.');
  const fAction = field('Action (optional)', actionText);
  const caret = h('pre', { class: 'sql-caret', hidden: true, 'aria-hidden': 'true' });
  const result = h('div', { role: 'status', class: 'result' });
  const sync = () => {
    fFilter.row.hidden = filterKind.value === 'true' || filterKind.value === 'false';
  };
  filterKind.addEventListener('change', sync);
  sync();
  const place = (f: Field, text: HTMLTextAreaElement, error: ApiError) => {
    f.setError(error.detail);
    const pos = error.position;
    text.focus();
    if (!pos) return;
    const lines = text.value.split('\n');
    const offset = lines.slice(0, pos.line - 1).reduce((n, l) => n + l.length + 1, 0) + pos.column - 1;
    text.setSelectionRange(offset, Math.min(text.value.length, offset + 1));
    caret.hidden = false;
    caret.textContent = `${lines[pos.line - 1] ?? ''}\n${' '.repeat(Math.max(0, pos.column - 1))}^ line ${pos.line}, column ${pos.column}`;
    f.row.appendChild(caret);
  };
  const save = async (event: Event) => {
    event.preventDefault();
    for (const f of [fName, fFilter, fAction]) f.setError(null);
    caret.hidden = true;
    let filter: Record<string, Json>;
    if (filterKind.value === 'sql') filter = { sql: filterText.value };
    else if (filterKind.value === 'correlation') {
      try {
        filter = { correlation: JSON.parse(filterText.value || '{}') as Json };
      } catch {
        fFilter.setError('Not valid JSON: write an object such as {"correlationId": "c-1", "properties": {"k": "v"}}.');
        filterText.focus();
        return;
      }
    } else filter = { [filterKind.value]: {} };
    const body: Record<string, Json> = { filter, action: actionText.value.trim() ? { sql: actionText.value } : null };
    const ruleName = name.value.trim();
    if (!ruleName) {
      fName.setError('A rule needs a name.');
      name.focus();
      return;
    }
    try {
      await api.call('PUT', `${node.path}/rules/${encodeURIComponent(ruleName)}`, body);
      say(`Saved rule ${ruleName}.`);
      reload();
    } catch (error) {
      if (!(error instanceof ApiError)) {
        replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
        return;
      }
      const f = error.field ?? '';
      if (f.startsWith('filter')) place(fFilter, filterText, error);
      else if (f.startsWith('action')) place(fAction, actionText, error);
      else if (f === 'name' || f === 'path') fName.setError(error.detail);
      else replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
    }
  };
  const remove = async () => {
    if (!rule || !(await confirmDialog(`Delete rule ${rule.name}?`, 'Messages this rule matched stop reaching the subscription.', 'Delete rule'))) return;
    try {
      await api.call('DELETE', `${node.path}/rules/${encodeURIComponent(rule.name)}`);
      say(`Deleted rule ${rule.name}.`);
      reload();
    } catch (error) {
      replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
    }
  };
  if (rule) name.readOnly = true;
  return h(
    'form',
    { class: 'rule', novalidate: true, onsubmit: save, 'aria-label': rule ? `Rule ${rule.name}` : 'New rule' },
    fName.row,
    fKind.row,
    fFilter.row,
    fAction.row,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'primary' }, rule ? 'Save rule' : 'Add rule'), rule ? h('button', { type: 'button', class: 'danger', onclick: () => void remove() }, 'Delete') : null),
    result,
  );
}

/** A modal confirmation (native <dialog>: focus stays inside, Escape cancels). */
function confirmDialog(title: string, text: string, confirm: string): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = uid('dialog');
    const yes = h('button', { type: 'button', class: 'danger' }, confirm);
    const no = h('button', { type: 'button' }, 'Cancel');
    const dialog = h('dialog', { 'aria-labelledby': titleId, class: 'confirm' }, h('h2', { id: titleId }, title), h('p', {}, text), h('div', { class: 'form-actions' }, no, yes));
    const opener = document.activeElement as HTMLElement | null;
    const close = (answer: boolean) => {
      dialog.close();
      dialog.remove();
      opener?.focus();
      resolve(answer);
    };
    yes.addEventListener('click', () => close(true));
    no.addEventListener('click', () => close(false));
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault();
      close(false);
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    no.focus();
  });
}
