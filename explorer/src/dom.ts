/**
 * Building the page with DOM APIs only. Text always goes in as text nodes, attribute
 * values through setAttribute: nothing here parses a string as markup, so message bodies
 * and properties stay data (the page's CSP also forbids every HTML sink via Trusted Types).
 */
export type Child = Node | string | number | bigint | boolean | null | undefined | Child[];
type Handler = (event: Event) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Handler>;

const refused = new Set(['style', 'innerhtml', 'outerhtml', 'srcdoc']);

function append(parent: Node, child: Child): void {
  if (child === null || child === undefined || child === false || child === true) return;
  if (Array.isArray(child)) {
    for (const c of child) append(parent, c);
    return;
  }
  parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
}

function applyAttrs(el: Element, attrs: Attrs | undefined): void {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (refused.has(key.toLowerCase())) throw new Error(`attribute ${key} is not allowed`);
    if (typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'value' && 'value' in el) {
      (el as HTMLInputElement).value = String(value);
    } else if (key === 'checked' && 'checked' in el) {
      (el as HTMLInputElement).checked = Boolean(value);
    } else {
      el.setAttribute(key === 'className' ? 'class' : key, value === true ? '' : String(value));
    }
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

const svgNs = 'http://www.w3.org/2000/svg';
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs?: Attrs, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(svgNs, tag);
  applyAttrs(el, attrs);
  append(el, children);
  return el;
}

export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let ids = 0;
export const uid = (prefix: string) => `${prefix}-${++ids}`;

/** A labelled form field with a place for its error (aria-describedby, aria-invalid). */
export interface Field {
  row: HTMLElement;
  input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
  setError(message: string | null): void;
}

export function field(label: string, input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, hint?: string): Field {
  const id = input.id || uid('f');
  input.id = id;
  const error = h('p', { class: 'field-error', id: `${id}-error`, hidden: true });
  const hintEl = hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null;
  input.setAttribute('aria-describedby', [hintEl ? `${id}-hint` : '', `${id}-error`].filter(Boolean).join(' '));
  const checkbox = input instanceof HTMLInputElement && input.type === 'checkbox';
  const row = checkbox
    ? h('div', { class: 'field checkbox' }, input, h('label', { for: id }, label), hintEl, error)
    : h('div', { class: 'field' }, h('label', { for: id }, label), input, hintEl, error);
  return {
    row,
    input,
    setError(message) {
      error.hidden = message === null;
      error.textContent = message ?? '';
      if (message === null) input.removeAttribute('aria-invalid');
      else input.setAttribute('aria-invalid', 'true');
    },
  };
}
