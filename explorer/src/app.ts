/**
 * Sluice Explorer: the namespace tree with live counts, an entity's properties, rules and
 * authorization rules, and its messages (peek, detail, send, resubmit, purge, cancel,
 * receive-and-delete). Views are rebuilt from data with DOM APIs (dom.ts); the address
 * hash says which entity is open, so the back button and links work.
 */
import { ApiError, entityPath, explain, Sluice, type Entity, type EntityKind, type Rule, type SubQueue } from './api.js';
import { chart, History, states, type StateKey } from './chart.js';
import { forgetCredentials, loadCredentials, readCredentials, saveCredentials, CredentialsError, type Credentials } from './connection.js';
import { field, h, replace, type Field } from './dom.js';
import { countBadges, countList } from './counts.js';
import { allNodes, displayPath, kindLabel, type Namespace, type TreeNode, type ViewContext } from './model.js';
import { ruleEditor } from './rules.js';
import { renderAuthorization } from './authorization-view.js';
import { renderMessages } from './messages-view.js';
import { renderProperties } from './properties-view.js';
import { renderSend } from './send-view.js';

const refreshMs = 5_000;

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

  constructor(private readonly els: { tree: HTMLElement; main: HTMLElement; session: HTMLElement; namespace: HTMLElement; status: HTMLElement }) {}

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
    this.els.tree.hidden = true;
    replace(this.els.session);
    const input = h('textarea', {
      rows: 4,
      spellcheck: 'false',
      autocomplete: 'off',
      placeholder: `Endpoint=${location.origin}/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=...`,
    });
    const f = field(
      'Connection string or SAS token',
      input,
      'Paste the "Connection string:" line that npm start printed. The key stays in this tab: the page signs short-lived tokens with it and sends only those.',
    );
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
    this.els.tree.hidden = false;
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
        const subscriptions =
          sub === 'subscriptions' && subName ? [node('subscription', await read(entityPath('subscription', subName, name), subName), name)] : [];
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
    const focused =
      document.activeElement instanceof HTMLElement && this.els.tree.contains(document.activeElement) ? document.activeElement.dataset.path : undefined;
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
      queues.length === 0
        ? h('p', { class: 'muted' }, 'No queues yet.')
        : h(
            'ul',
            { 'aria-labelledby': 'tree-queues' },
            queues.map((q) => h('li', {}, link(q))),
          ),
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
                  ? h(
                      'ul',
                      { 'aria-label': `Subscriptions of ${t.node.name}` },
                      t.subscriptions.map((s) => h('li', {}, link(s))),
                    )
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
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Entity'),
            states.map((s) => h('th', { scope: 'col', class: 'num' }, s.label)),
          ),
        ),
        h(
          'tbody',
          {},
          rows.length === 0
            ? h('tr', {}, h('td', { colspan: states.length + 1, class: 'muted' }, 'No queues or subscriptions yet: create one below.'))
            : rows.map((n) =>
                h(
                  'tr',
                  {},
                  h('th', { scope: 'row' }, h('a', { href: `#${n.path}` }, displayPath(n))),
                  states.map((s) => cell(n, s.key)),
                ),
              ),
        ),
      ),
    );
  }

  private renderHome(notice: string | null): void {
    this.homeBox = h('div', { class: 'table-wrap' });
    const table = this.homeBox;
    this.renderHomeTable();
    const create = (kind: 'queue' | 'topic') =>
      this.createForm(
        kind,
        h('input', { type: 'text', autocomplete: 'off', required: true }),
        (name) => entityPath(kind, name),
        (name) => this.say(`Created ${kind} ${name}`),
      );
    const auth = h('section', { 'aria-labelledby': 'ns-auth' }, h('h2', { id: 'ns-auth' }, 'Namespace authorization rules'));
    replace(
      this.els.main,
      h('h2', {}, 'Namespace ', location.host),
      notice ? h('p', { class: 'notice', role: 'alert' }, notice) : null,
      h(
        'p',
        { class: 'muted' },
        'Counts refresh every few seconds. A dead-lettered count opens those messages: pick one to see why it died, then resubmit it.',
      ),
      table,
      h('section', { class: 'create', 'aria-label': 'Create entities' }, create('queue'), create('topic')),
      this.credentials?.entityPath ? null : auth,
    );
    if (!this.credentials?.entityPath) void renderAuthorization(this.context, auth, '');
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

  /** What the views may use: the API, the status line, a refresh of the namespace. */
  private get context(): ViewContext {
    return { api: this.api!, say: (m) => this.say(m), refresh: () => this.refresh() };
  }

  private renderTab(node: TreeNode, tab: string, panel: HTMLElement, subQueue: SubQueue): void {
    // Each render draws into a box of its own: a view still loading when another tab (or the
    // same one again) is chosen then finishes into a detached box, instead of replacing the
    // form someone is already typing into.
    const view = h('div', { class: 'view' });
    replace(panel, view);
    if (tab === 'messages') renderMessages(this.context, node, view, subQueue);
    else if (tab === 'send') renderSend(this.context, node, view);
    else if (tab === 'properties') void renderProperties(this.context, node, view);
    else if (tab === 'rules') void this.renderRules(node, view);
    else if (tab === 'subscriptions') this.renderSubscriptions(node, view);
    else if (tab === 'authorization') void renderAuthorization(this.context, view, node.path);
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
      h('p', { class: 'muted' }, "A message reaches this subscription when any rule's filter matches; that rule's action then changes its properties."),
      rules.map((r) => ruleEditor(api, node, r, reload, (m) => this.say(m))),
      h('h3', {}, 'Add a rule'),
      ruleEditor(api, node, null, reload, (m) => this.say(m)),
    );
  }

  private renderSubscriptions(node: TreeNode, panel: HTMLElement): void {
    const subs = this.namespace.topics.find((t) => t.node.path === node.path)?.subscriptions ?? [];
    replace(
      panel,
      subs.length === 0
        ? h('p', { class: 'muted' }, 'No subscriptions: messages sent to this topic reach nobody.')
        : h(
            'ul',
            {},
            subs.map((s) => h('li', {}, h('a', { href: `#${s.path}` }, s.name))),
          ),
      this.createForm('subscription', h('input', { type: 'text', autocomplete: 'off' }), (name) => entityPath('subscription', name, node.name)),
    );
  }

  /** A one-field form that creates the entity named in it, then opens it. */
  private createForm(
    kind: 'queue' | 'topic' | 'subscription',
    name: HTMLInputElement,
    pathOf: (name: string) => string,
    created?: (name: string) => void,
  ): HTMLFormElement {
    const api = this.api!;
    const f = field(`New ${kind} name`, name);
    return h(
      'form',
      {
        class: 'inline-form',
        onsubmit: async (event: Event) => {
          event.preventDefault();
          f.setError(null);
          try {
            const path = pathOf(name.value.trim());
            await api.put(path, {});
            await this.refresh();
            created?.(name.value.trim());
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
  }
}
