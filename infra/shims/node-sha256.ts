/**
 * Stands in for `@smithy/core/checksum` in the Lambda bundles, where the clients take only
 * `Sha256` from it, to sign requests (SigV4). The package's Sha256 is Node's crypto when it
 * can hash SHA-256 and otherwise a pure JavaScript SHA-256, which a bundle must carry because
 * the choice is made at run time (about 3 KB minified). Lambda's Node always hashes SHA-256,
 * so this is the package's native class alone; were it ever missing, `createHash` throws.
 * test/infra/bundling.test.ts checks it hashes as the package's does.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

/** What the SDK hands a hash as a secret (`SourceData` of @smithy/types). */
type SourceData = string | ArrayBuffer | ArrayBufferView;

/** A hash or, given a secret, an HMAC, with SHA-256 (the SDK's `Checksum`). */
export class Sha256 {
  readonly digestLength = 32;
  private readonly secret: SourceData | undefined;
  private hash: Hash | Hmac;
  private finished = false;

  constructor(secret?: SourceData) {
    this.secret = secret;
    this.hash = this.createHash();
  }

  update(data: Uint8Array): void {
    if (this.finished) throw new Error('Attempted to update an already finished hash.');
    this.hash.update(data);
  }

  /** A hash's digest leaves it open to more data (it digests a copy); an HMAC's finishes it. */
  async digest(): Promise<Uint8Array> {
    let buf: Buffer;
    if (this.secret) {
      this.finished = true;
      buf = this.hash.digest();
    } else {
      buf = (this.hash as Hash).copy().digest();
    }
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  reset(): void {
    this.hash = this.createHash();
    this.finished = false;
  }

  private createHash(): Hash | Hmac {
    return this.secret ? createHmac('sha256', toBuffer(this.secret)) : createHash('sha256');
  }
}

export { Sha256 as Sha256Node };

function toBuffer(data: SourceData): string | Buffer {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}
