/** Authorization rules of the namespace or an entity: keys hidden until shown, new rules, new keys. */
import { explain, type AuthorizationRule } from './api.js';
import { confirmDialog } from './dialog.js';
import { field, h, replace } from './dom.js';
import type { ViewContext } from './model.js';

export async function renderAuthorization(ctx: ViewContext, container: HTMLElement, path: string): Promise<void> {
  const api = ctx.api;
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
  const reload = () => void renderAuthorization(ctx, container, path);
  const result = h('div', { role: 'status', class: 'result' });
  const run = async (what: string, action: () => Promise<unknown>) => {
    try {
      await action();
      ctx.say(what);
      reload();
    } catch (error) {
      replace(result, h('p', { class: 'field-error', role: 'alert' }, explain(error)));
    }
  };
  const secret = (label: string, value: string | undefined) => {
    if (!value) return h('td', {}, '–');
    const out = h('code', {}, '••••••••');
    const toggle = h(
      'button',
      {
        type: 'button',
        class: 'link',
        'aria-label': `Show ${label}`,
        onclick: () => {
          const showing = out.textContent !== '••••••••';
          out.textContent = showing ? '••••••••' : value;
          toggle.textContent = showing ? 'Show' : 'Hide';
          toggle.setAttribute('aria-label', `${showing ? 'Show' : 'Hide'} ${label}`);
        },
      },
      'Show',
    );
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
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Key name', 'Rights', 'Primary key', 'Secondary key', 'Actions'].map((t) => h('th', { scope: 'col' }, t)),
              ),
            ),
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
                      h(
                        'button',
                        {
                          type: 'button',
                          onclick: () => void run(`Regenerated the primary key of ${r.keyName}.`, () => api.regenerateKey(path, r.keyName, 'primary')),
                        },
                        'New primary key',
                      ),
                      h(
                        'button',
                        {
                          type: 'button',
                          onclick: () => void run(`Regenerated the secondary key of ${r.keyName}.`, () => api.regenerateKey(path, r.keyName, 'secondary')),
                        },
                        'New secondary key',
                      ),
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
            ctx.say(`Saved rule ${name.value.trim()}.`);
            reload();
          } catch (error) {
            fName.setError(explain(error));
            name.focus();
          }
        },
      },
      fName.row,
      h(
        'fieldset',
        { class: 'rights' },
        h('legend', {}, 'Rights'),
        rights.map((r) => r.row),
      ),
      h('button', { type: 'submit' }, 'Add or replace rule'),
    ),
  );
}
