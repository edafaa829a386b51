/**
 * The two key credentials of @azure/core-auth, re-implemented with the same shape (class
 * names, `name`/`key`/`signature` getters, `update`) so that Sluice's client has no
 * dependency on Azure packages and a program's `new AzureNamedKeyCredential(...)` works
 * whichever package it imported it from.
 */
export class AzureNamedKeyCredential {
  private _name: string;
  private _key: string;

  get key(): string {
    return this._key;
  }

  get name(): string {
    return this._name;
  }

  constructor(name: string, key: string) {
    if (!name || !key) throw new TypeError('name and key must be non-empty strings');
    this._name = name;
    this._key = key;
  }

  update(newName: string, newKey: string): void {
    if (!newName || !newKey) throw new TypeError('newName and newKey must be non-empty strings');
    this._name = newName;
    this._key = newKey;
  }
}

export class AzureSASCredential {
  private _signature: string;

  get signature(): string {
    return this._signature;
  }

  constructor(signature: string) {
    if (!signature) throw new Error('shared access signature must be a non-empty string');
    this._signature = signature;
  }

  update(newSignature: string): void {
    if (!newSignature) throw new Error('shared access signature must be a non-empty string');
    this._signature = newSignature;
  }
}

/** Duck-typed like core-auth's `isNamedKeyCredential`, so credentials from @azure/core-auth work too. */
export function isNamedKeyCredential(credential: unknown): credential is AzureNamedKeyCredential {
  const c = credential as { name?: unknown; key?: unknown } | null;
  return typeof c === 'object' && c !== null && typeof c.name === 'string' && typeof c.key === 'string';
}

export function isSASCredential(credential: unknown): credential is AzureSASCredential {
  const c = credential as { signature?: unknown } | null;
  return typeof c === 'object' && c !== null && typeof c.signature === 'string';
}
