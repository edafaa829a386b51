/**
 * The API calls the integration tests make again and again, each asserting the status it
 * must answer (with the reply in the failure message), and the B1 error check. Built over a
 * getter, `queueHelpers(() => api)`, as most files make their client in `beforeAll`.
 */
import { expect } from 'vitest';
import type { Json, Reply } from './api.js';

export type Api = (method: string, path: string, body?: unknown) => Promise<Reply>;
/** A message, entity or rule as the API answers it. */
export type Msg = Json;
type Props = Record<string, unknown>;

const shown = (path: string, res: Reply) => `${path}: ${JSON.stringify(res.body)}`;

/** B1 shape, status, code and (when given) the field the message names. */
export function expectError(reply: Reply, status: number, code: string, field?: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.body).toEqual({
    error: { code, message: expect.any(String), retryable: expect.any(Boolean), requestId: expect.any(String) },
  });
  if (field !== undefined) expect(reply.body.error.message).toContain(field);
}

/** Queue calls by queue name; receive, peek and settleAt take an entity path (a subqueue too). */
export function queueHelpers(api: () => Api) {
  async function createQueue(name: string, props: Props = {}): Promise<Msg> {
    const path = `/queues/${name}`;
    const res = await api()('PUT', path, props);
    expect(res.status, shown(path, res)).toBe(201);
    return res.body;
  }
  async function send(queue: string, message: Props): Promise<Msg> {
    const path = `/queues/${queue}/messages`;
    const res = await api()('POST', path, message);
    expect(res.status, shown(path, res)).toBe(201);
    return res.body;
  }
  async function receive(path: string, body: Props = {}): Promise<Msg[]> {
    const res = await api()('POST', `${path}/messages/receive`, body);
    expect(res.status, shown(path, res)).toBe(200);
    return res.body.messages;
  }
  async function receiveOne(path: string): Promise<Msg> {
    const got = await receive(path);
    expect(got).toHaveLength(1);
    return got[0];
  }
  async function peek(path: string, max = 100): Promise<Msg[]> {
    const res = await api()('GET', `${path}/messages?maxMessages=${max}`);
    expect(res.status, shown(path, res)).toBe(200);
    return res.body.messages;
  }
  const settleAt = (path: string, m: Msg, action: string, extra: Props = {}) =>
    api()('POST', `${path}/messages/${m.sequenceNumber}/${action}`, { lockToken: m.lockToken, ...extra });
  const settle = (queue: string, m: Msg, action: string, extra: Props = {}) => settleAt(`/queues/${queue}`, m, action, extra);
  const dlq = (queue: string) => `/queues/${queue}/$deadletterqueue`;
  return { createQueue, send, receive, receiveOne, peek, settle, settleAt, dlq };
}

/** Calls by entity path (`/queues/q`, `/topics/t/subscriptions/s`, a subqueue), for forwarding and topics. */
export function entityHelpers(api: () => Api) {
  /** Creates an entity or rule; `status` is what it must answer. */
  async function put(path: string, body: unknown = {}, status = 201): Promise<Msg> {
    const res = await api()('PUT', path, body);
    expect(res.status, shown(path, res)).toBe(status);
    return res.body;
  }
  /** Creates or updates: any 2xx will do. */
  async function putOk(path: string, body: unknown = {}): Promise<Msg> {
    const res = await api()('PUT', path, body);
    expect(res.status, shown(path, res)).toBeLessThan(300);
    return res.body;
  }
  async function sendTo(path: string, message: Props): Promise<Msg> {
    const res = await api()('POST', `${path}/messages`, message);
    expect(res.status, shown(path, res)).toBe(201);
    return res.body;
  }
  /** Sends to a topic; answers which subscriptions took a copy. */
  const publish = (topic: string, message: Props): Promise<{ messageId: string; subscriptions: string[] }> => sendTo(`/topics/${topic}`, message);
  async function receiveAt(path: string, body: Props): Promise<Msg[]> {
    const res = await api()('POST', `${path}/messages/receive`, body);
    expect(res.status, shown(path, res)).toBe(200);
    return res.body.messages;
  }
  /** Takes up to 100 messages off for good (receiveAndDelete). */
  const receiveAll = (path: string) => receiveAt(path, { mode: 'receiveAndDelete', maxMessages: 100 });
  async function peekAll(path: string): Promise<Msg[]> {
    const res = await api()('GET', `${path}/messages?maxMessages=100`);
    expect(res.status, shown(path, res)).toBe(200);
    return res.body.messages;
  }
  const dlq = (path: string) => `${path}/$deadletterqueue`;
  const tdlq = (path: string) => `${path}/$transferdeadletterqueue`;
  return { put, putOk, sendTo, publish, receiveAt, receiveAll, peekAll, dlq, tdlq };
}

/** Queue names `${stem}1`, `${stem}2`, ... created with the given properties, for files whose tests each take a fresh queue. */
export function queueMaker(api: () => Api, stem: string) {
  let counter = 0;
  return async function newQueue(props: Props = {}): Promise<string> {
    const name = `${stem}${++counter}`;
    const created = await api()('PUT', `/queues/${name}`, props);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return name;
  };
}
