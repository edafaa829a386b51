/** An entity's properties, edited in place with the server's validation errors at the field. */
import { ApiError, explain, type Entity, type Json } from './api.js';
import { confirmDialog } from './dialog.js';
import { field, h, replace, type Field } from './dom.js';
import { humanize, fieldKey, displayPath, type TreeNode, type ViewContext } from './model.js';

/** `notice`: what the last save said, kept across the redraw that shows the saved values. */
export async function renderProperties(ctx: ViewContext, node: TreeNode, panel: HTMLElement, notice?: string): Promise<void> {
  const api = ctx.api;
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
      input = h(
        'select',
        {},
        ['Active', 'Disabled', 'SendDisabled', 'ReceiveDisabled'].map((s) => h('option', { value: s }, s)),
      );
      input.value = String(value);
    } else if (typeof value === 'boolean') input = h('input', { type: 'checkbox', checked: value });
    else if (typeof value === 'number') input = h('input', { type: 'number', value: String(value) });
    else input = h('input', { type: 'text', value: value === null ? '' : String(value), autocomplete: 'off', placeholder: value === null ? 'not set' : null });
    fields.set(key, { f: field(humanize(key), input), original: value });
  }
  const result = h('div', { role: 'status', class: 'result' }, notice ? h('p', { class: 'ok' }, notice) : null);
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
      const saved = `Saved ${Object.keys(changes).join(', ')}.`;
      replace(result, h('p', { class: 'ok' }, saved));
      ctx.say(`Saved the properties of ${displayPath(node)}.`);
      await ctx.refresh();
      // The form is drawn again with the values as stored; the notice stays with it.
      void renderProperties(ctx, node, panel, saved);
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
    if (
      !(await confirmDialog(
        `Delete ${displayPath(node)}?`,
        `The ${node.kind} and every message in it are deleted. This cannot be undone.`,
        `Delete ${node.kind}`,
      ))
    )
      return;
    try {
      await api.remove(node.path);
      ctx.say(`Deleted ${displayPath(node)}.`);
      await ctx.refresh();
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
      h(
        'div',
        { class: 'form-actions' },
        h('button', { type: 'submit', class: 'primary' }, 'Save changes'),
        h('button', { type: 'button', class: 'danger', onclick: () => void remove() }, `Delete ${node.kind}`),
      ),
    ),
    result,
    h(
      'p',
      { class: 'muted' },
      `Created ${entity.runtime?.createdAt ?? '?'}, updated ${entity.runtime?.updatedAt ?? '?'}, last used ${entity.runtime?.accessedAt ?? '?'}.`,
    ),
  );
}
