/**
 * Stands in for `bowser` in the Lambda bundles. The SDK's browser user-agent provider
 * (`createUserAgentStringParsingProvider`) imports it dynamically to read a browser's
 * `navigator.userAgent`; on Node the SDK builds its user agent with `util-user-agent-node`
 * and never calls that provider. A single-file bundle dropped the unreachable import, but a
 * split one ships every dynamic import's target as a chunk (34 KB in each zip). Should a
 * browser provider ever run here, it parses nothing, as it does where there is no window.
 */
export const parse = (): undefined => undefined;
