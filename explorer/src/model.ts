/** The namespace as the page holds it: entities with their paths and last-read properties. */
import type { Entity, EntityKind, Sluice } from './api.js';

export interface TreeNode {
  kind: EntityKind;
  name: string;
  topic?: string;
  path: string;
  entity: Entity;
}

export interface Namespace {
  queues: TreeNode[];
  topics: { node: TreeNode; subscriptions: TreeNode[] }[];
}

export const kindLabel: Record<EntityKind, string> = { queue: 'Queue', topic: 'Topic', subscription: 'Subscription' };

export function allNodes(ns: Namespace): TreeNode[] {
  return [...ns.queues, ...ns.topics.flatMap((t) => [t.node, ...t.subscriptions])];
}

export function displayPath(n: TreeNode): string {
  return n.kind === 'subscription' ? `${n.topic}/${n.name}` : n.name;
}

/** What a view may use: the API, the status line, a refresh of the namespace and its counts. */
export interface ViewContext {
  api: Sluice;
  say(message: string): void;
  refresh(): Promise<void>;
}

/** `lockDuration` → `Lock Duration`: a property's label. */
export function humanize(key: string): string {
  return key.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());
}

/** `applicationProperties.color` → `applicationProperties`; `filter.sql` stays whole for rules. */
export function fieldKey(path: string | null): string | null {
  return path ? (path.split(/[.[]/)[0] ?? null) : null;
}
