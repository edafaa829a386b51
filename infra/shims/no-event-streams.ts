/**
 * Stands in for `@smithy/core/event-streams` in the Lambda bundles. The SDK's protocol code
 * loads it (a dynamic import, which a single-file bundle inlines) only to serialize an
 * operation whose input or output is an event stream; no operation of the clients Sluice
 * bundles (DynamoDB, DynamoDB Streams, API Gateway Management) has one, so the codec is
 * dead weight (about 15 KB minified). Should a client ever reach it, the call fails loudly.
 */
const unavailable = (): never => {
  throw new Error('event streams are not bundled into Sluice functions (infra/shims/no-event-streams.ts)');
};

export class EventStreamSerde {
  constructor() {
    unavailable();
  }
}

export const eventStreamSerdeProvider = unavailable;
