import { Explorer } from './app.js';

const get = (id: string) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
};

new Explorer({ tree: get('tree'), main: get('main'), session: get('session'), namespace: get('namespace'), status: get('status') }).start();
