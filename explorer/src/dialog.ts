import { h, uid } from './dom.js';

/** A modal confirmation (native <dialog>: focus stays inside, Escape cancels). */
export function confirmDialog(title: string, text: string, confirm: string): Promise<boolean> {
  return new Promise((resolve) => {
    const titleId = uid('dialog');
    const yes = h('button', { type: 'button', class: 'danger' }, confirm);
    const no = h('button', { type: 'button' }, 'Cancel');
    const dialog = h(
      'dialog',
      { 'aria-labelledby': titleId, class: 'confirm' },
      h('h2', { id: titleId }, title),
      h('p', {}, text),
      h('div', { class: 'form-actions' }, no, yes),
    );
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
