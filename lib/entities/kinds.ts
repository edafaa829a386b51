/** The kinds of entity (E1). Below the entity paths, properties and store keys, which all name them. */
export type EntityKind = 'queue' | 'topic' | 'subscription';

/** An entity's subqueues: its messages, its dead letters, and (Service Bus's) transfer dead letters. */
export type Subqueue = 'active' | 'deadletter' | 'transfer';
