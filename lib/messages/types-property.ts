/**
 * The reserved application property that records what JSON cannot say about a message: that
 * its body is bytes (base64 text) or text sent over Service Bus's REST protocol, a Date, or
 * which property values are Dates. `sluice/client` writes and reads it; the REST protocol
 * writes it and never shows it. No imports: the client's bundle takes it as it is.
 */
export const TYPES_PROPERTY = '$sluice-types';
