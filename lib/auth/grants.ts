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
}

/** True when `grant` reaches `path` (any spelling `resourceSegments` reads) with `right`. */
export function grantAllows(grant: Grant, path: string, right: Right): boolean {
  const target = resourceSegments(path);
  return target !== undefined && segmentsCover(grant.scope, target) && hasRight(grant.rights, right);
}
