/**
 * The two key credentials of @azure/core-auth, re-implemented with the same shape (class
 * names, `name`/`key`/`signature` getters, `update`) so that Sluice's client has no
 * dependency on Azure packages and a program's `new AzureNamedKeyCredential(...)` works
 * whichever package it imported it from.
 */
export class AzureNamedKeyCredential {
  private _name: string;
  private _key: string;

  /**
   * The value of the key to be used in authentication.
   */
  get key(): string {
    return this._key;
  }

  /**
   * The value of the name to be used in authentication.
   */
  get name(): string {
    return this._name;
  }

  /**
   * Create an instance of an AzureNamedKeyCredential for use
   * with a service client.
   *
   * @param name - The initial value of the name to use in authentication.
   * @param key - The initial value of the key to use in authentication.
   */
  constructor(name: string, key: string) {
    if (!name || !key) throw new TypeError('name and key must be non-empty strings');
    this._name = name;
    this._key = key;
  }

  /**
   * Change the value of the key.
   *
   * Updates will take effect upon the next request after
   * updating the key value.
   *
   * @param newName - The new name value to be used.
   * @param newKey - The new key value to be used.
   */
  update(newName: string, newKey: string): void {
    if (!newName || !newKey) throw new TypeError('newName and newKey must be non-empty strings');
    this._name = newName;
    this._key = newKey;
  }
}

/**
 * A static-signature-based credential that supports updating
 * the underlying signature value.
 */
export class AzureSASCredential {
  private _signature: string;

  /**
   * The value of the shared access signature to be used in authentication
   */
  get signature(): string {
    return this._signature;
  }

  /**
   * Create an instance of an AzureSASCredential for use
   * with a service client.
   *
   * @param signature - The initial value of the shared access signature to use in authentication
   */
  constructor(signature: string) {
    if (!signature) throw new Error('shared access signature must be a non-empty string');
    this._signature = signature;
  }

  /**
   * Change the value of the signature.
   *
   * Updates will take effect upon the next request after
   * updating the signature value.
   *
   * @param newSignature - The new shared access signature value to be used
   */
  update(newSignature: string): void {
    if (!newSignature) throw new Error('shared access signature must be a non-empty string');
    this._signature = newSignature;
  }
}

/**
 * Whether `credential` is a named key credential (a `name` and a `key`), duck-typed like @azure/core-auth's
 * `isNamedKeyCredential`, so credentials made with @azure/core-auth work too.
 *
 * @param credential - Any value.
 * @returns True for an object with string `name` and `key`.
 */
export function isNamedKeyCredential(credential: unknown): credential is AzureNamedKeyCredential {
  const c = credential as { name?: unknown; key?: unknown } | null;
  return typeof c === 'object' && c !== null && typeof c.name === 'string' && typeof c.key === 'string';
}

/**
 * Tests an object to determine whether it implements SASCredential.
 *
 * @param credential - The assumed SASCredential to be tested.
 * @returns True for an object with a string `signature`.
 */
export function isSASCredential(credential: unknown): credential is AzureSASCredential {
  const c = credential as { signature?: unknown } | null;
  return typeof c === 'object' && c !== null && typeof c.signature === 'string';
}
