import { expect } from 'vitest';
import type { Reply } from './api.js';

type Api = (method: string, path: string, body?: unknown) => Promise<Reply>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Msg = any;

/** The calls the queue tests make again and again, each asserting its success status. */
export function queueHelpers(api: () => Api) {
  async function createQueue(name: string, props: Record<string, unknown> = {}) {
    const res = await api()('PUT', `/queues/${name}`, props);
    expect(res.status).toBe(201);
  }
  async function send(queue: string, message: Record<string, unknown>): Promise<Msg> {
    const res = await api()('POST', `/queues/${queue}/messages`, message);
    expect(res.status).toBe(201);
    return res.body;
  }
  async function receive(path: string, body: Record<string, unknown> = {}): Promise<Msg[]> {
    const res = await api()('POST', `${path}/messages/receive`, body);
    expect(res.status).toBe(200);
    return res.body.messages;
  }
  async function receiveOne(path: string): Promise<Msg> {
    const got = await receive(path);
    expect(got).toHaveLength(1);
    return got[0];
  }
  async function peek(path: string): Promise<Msg[]> {
    const res = await api()('GET', `${path}/messages?maxMessages=100`);
    expect(res.status).toBe(200);
    return res.body.messages;
  }
  const settle = (queue: string, m: Msg, action: string, extra: Record<string, unknown> = {}) =>
    api()('POST', `/queues/${queue}/messages/${m.sequenceNumber}/${action}`, { lockToken: m.lockToken, ...extra });
  const dlq = (queue: string) => `/queues/${queue}/$deadletterqueue`;
  return { createQueue, send, receive, receiveOne, peek, settle, dlq };
}
