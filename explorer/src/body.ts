/** How a message body is shown: JSON pretty-printed, text as it is, or bytes as hex. */
import type { Json } from './api.js';

export type BodyView = 'json' | 'text' | 'hex';

const isBytes = (contentType: string | undefined) => /^application\/octet-stream/i.test(contentType ?? '');

/** Bytes travel as base64 text when the content type says octet-stream. */
function bytesOf(body: Json, contentType: string | undefined): Uint8Array {
  if (typeof body === 'string' && isBytes(contentType)) {
    try {
      return Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
    } catch {
      // not base64 after all: its UTF-8 bytes
    }
  }
  return new TextEncoder().encode(typeof body === 'string' ? body : JSON.stringify(body));
}

export function defaultView(body: Json, contentType: string | undefined): BodyView {
  if (isBytes(contentType)) return 'hex';
  if (typeof body === 'string') {
    try {
      JSON.parse(body);
      return 'json';
    } catch {
      return 'text';
    }
  }
  return 'json';
}

export function renderBody(body: Json, contentType: string | undefined, view: BodyView): string {
  if (view === 'hex') {
    const bytes = bytesOf(body, contentType);
    const lines: string[] = [];
    for (let i = 0; i < bytes.length; i += 16) {
      const row = bytes.subarray(i, i + 16);
      const hex = [...row].map((b) => b.toString(16).padStart(2, '0')).join(' ');
      const ascii = [...row].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
      lines.push(`${i.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
    }
    return lines.join('\n') || '(empty)';
  }
  if (view === 'json') {
    if (typeof body === 'string') {
      try {
        return JSON.stringify(JSON.parse(body), null, 2);
      } catch {
        return JSON.stringify(body);
      }
    }
    return JSON.stringify(body, null, 2);
  }
  return typeof body === 'string' ? body : JSON.stringify(body);
}
