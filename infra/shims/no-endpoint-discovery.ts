/**
 * Stands in for `@aws-sdk/middleware-endpoint-discovery` in the Lambda bundles (about 1.5 KB
 * with the endpoint cache it builds). DynamoDB's client of this SDK version still resolves the
 * discovery setting and builds an endpoint cache in its constructor, but none of its commands
 * adds the discovery middleware any more, so nothing reads either: every request goes to the
 * resolved endpoint. Sluice never turns discovery on. The stand-in gives the constructor the
 * same configuration fields without the cache, and reads no discovery setting from the
 * environment or the shared config files (test/infra/bundling.test.ts: a bundled client sends
 * as before, with discovery asked for or not).
 */

interface DiscoveryInput {
  endpointDiscoveryEnabled?: boolean;
  endpointDiscoveryEnabledProvider?: () => Promise<boolean | undefined>;
}

/** What the client's runtime configuration hands `loadConfig`: no setting is found anywhere. */
export const NODE_ENDPOINT_DISCOVERY_CONFIG_OPTIONS = {
  environmentVariableSelector: (): undefined => undefined,
  configFileSelector: (): undefined => undefined,
  default: undefined,
};

export function resolveEndpointDiscoveryConfig<T extends DiscoveryInput>(
  input: T,
  { endpointDiscoveryCommandCtor }: { endpointDiscoveryCommandCtor: unknown },
) {
  // Read before the assignment replaces it, as the package does.
  const { endpointDiscoveryEnabled, endpointDiscoveryEnabledProvider } = input;
  return Object.assign(input, {
    endpointDiscoveryCommandCtor,
    endpointDiscoveryEnabled: endpointDiscoveryEnabled !== undefined ? () => Promise.resolve(endpointDiscoveryEnabled) : endpointDiscoveryEnabledProvider,
    isClientEndpointDiscoveryEnabled: endpointDiscoveryEnabled !== undefined,
  });
}
