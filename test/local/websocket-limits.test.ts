/**
 * H1 on the local runtime as on AWS: API Gateway's WebSocket API takes frames of at most 32 KB
 * and messages of at most 128 KB, and closes the connection with 1009 past either; the local
 * stand-in does the same, so a client that works locally does not break on AWS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LocalRuntime } from '../../infra/local/runtime.js';
import { MAX_FRAME_BYTES, MAX_MESSAGE_BYTES, PONG_BODY } from '../../lib/notifications/protocol.js';
import { startTestRuntime } from '../support/runtime.js';

let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await startTestRuntime('wslimits');
});

afterAll(async () => {
  await runtime?.stop();
});

async function open(): Promise<WebSocket> {
  const ws = new WebSocket(runtime.websocketUrl);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return ws;
}

const closed = (ws: WebSocket) => new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
const nextFrame = (ws: WebSocket) => new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));

/** A ping frame padded with spaces to `bytes` (still valid JSON, routed as a ping). */
const pingOf = (bytes: number) => {
  const ping = '{"action":"ping"}';
  return ping.slice(0, -1) + ' '.repeat(bytes - ping.length) + '}';
};

describe('H1: the local WebSocket keeps API Gateway frame and message limits', () => {
  it('H1: a 32 KB frame is taken; a larger single frame closes the connection with 1009', async () => {
    const ws = await open();
    const pong = nextFrame(ws);
    ws.send(pingOf(MAX_FRAME_BYTES));
    expect(await pong).toBe(PONG_BODY);
    const code = closed(ws);
    ws.send(pingOf(MAX_FRAME_BYTES + 1));
    expect(await code).toBe(1009);
  });

  it('H1: a message in 32 KB fragments is taken up to 128 KB; past it the connection closes with 1009', async () => {
    const ws = await open();
    const sendFragmented = (text: string) => {
      for (let i = 0; i < text.length; i += MAX_FRAME_BYTES) ws.send(text.slice(i, i + MAX_FRAME_BYTES), { fin: i + MAX_FRAME_BYTES >= text.length });
    };
    const pong = nextFrame(ws);
    sendFragmented(pingOf(MAX_MESSAGE_BYTES));
    expect(await pong).toBe(PONG_BODY);
    const code = closed(ws);
    sendFragmented(pingOf(MAX_MESSAGE_BYTES + 1));
    expect(await code).toBe(1009);
  });
});
