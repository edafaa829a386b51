/**
 * What a rule is and what a verified token may do (A2, B3): the types the broker keeps and
 * checks against, below the authorizer, which reads the route table.
 */
import { hasRight, resourceSegments, segmentsCover, type Right } from './sas.js';

export interface AuthorizationRule {
  keyName: string;
  primaryKey: string;
  secondaryKey: string;
  rights: readonly Right[];
  /** `/` for the namespace, else one entity: `/queues/a`, `/topics/t`, `/topics/t/subscriptions/s`. */
  scopePath: string;
  /**
   * For an entity's rule: the incarnation of the entity it was made on (its `eid`). A
   * deleted entity's rules must open nothing, not even an entity of the same name made
   * later (A2): see `IsCurrent`.
   */
  incarnation?: string;
}

/**
 * What a genuine token may do: the segments of its `sr` and its rule's rights. Operations
 * that put messages into a second entity named in their body ask it about that entity too
 * (`grantAllows`), so one token's reach holds through the body as through the path.
 */
export interface Grant {
  readonly scope: readonly string[];
  readonly rights: readonly Right[];
  /**
   * Further grants the same request holds: the other readings of a Service Bus token's `sr`
   * (`/orders` is a queue or a topic) and the tokens of its supplementary headers
   * (lib/protocols/sas.ts). Sluice's own API never sets it.
   */
  readonly alternatives?: readonly Grant[];
}

/** True when `grant`, or one of its alternatives, reaches `path` (any spelling `resourceSegments` reads) with `right`. */
export function grantAllows(grant: Grant, path: string, right: Right): boolean {
  const target = resourceSegments(path);
  if (target === undefined) return false;
  const allows = (g: Grant): boolean => (segmentsCover(g.scope, target) && hasRight(g.rights, right)) || (g.alternatives ?? []).some(allows);
  return allows(grant);
}
