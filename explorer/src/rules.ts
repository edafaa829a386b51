/** A subscription rule's editor: the server's SQL syntax error is shown at its line and column. */
import { ApiError, explain, type Json, type Rule, type Sluice } from './api.js';
import { confirmDialog } from './dialog.js';
import { field, h, replace, type Field } from './dom.js';
import type { TreeNode } from './model.js';

function sqlOf(filter: Record<string, Json> | null | undefined): string {
  const sql = filter?.sql;
  return typeof sql === 'string' ? sql : '';
}

export function ruleEditor(api: Sluice, node: TreeNode, rule: Rule | null, reload: () => void, say: (m: string) => void): HTMLElement {
  const kind = rule ? (Object.keys(rule.filter)[0] ?? 'true') : 'sql';
  const name = h('input', { type: 'text', autocomplete: 'off', value: rule?.name ?? '' });
  const filterKind = h(
    'select',
    {},
    h('option', { value: 'sql' }, 'SQL filter'),
    h('option', { value: 'correlation' }, 'Correlation filter (JSON)'),
    h('option', { value: 'true' }, 'Match all (true)'),
    h('option', { value: 'false' }, 'Match none (false)'),
  );
  filterKind.value = kind;
  const filterText = h('textarea', {
    rows: 3,
    spellcheck: 'false',
    class: 'code',
    value: kind === 'sql' ? sqlOf(rule?.filter) : kind === 'correlation' ? JSON.stringify(rule?.filter.correlation ?? {}, null, 2) : '',
  });
  const actionText = h('textarea', { rows: 2, spellcheck: 'false', class: 'code', value: rule?.action?.sql ?? '', placeholder: "SET priority = 'high'" });
  const fName = field('Rule name', name);
  const fKind = field('Filter', filterKind);
  const fFilter = field('Filter expression', filterText, "SQL such as color = 'red' AND sys.label LIKE 'a%'; JSON for a correlation filter.");
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
    h(
      'div',
      { class: 'form-actions' },
      h('button', { type: 'submit', class: 'primary' }, rule ? 'Save rule' : 'Add rule'),
      rule ? h('button', { type: 'button', class: 'danger', onclick: () => void remove() }, 'Delete') : null,
    ),
    result,
  );
}
