/** The kinds of entity (E1). Below the entity paths, properties and store keys, which all name them. */
export type EntityKind = 'queue' | 'topic' | 'subscription';
