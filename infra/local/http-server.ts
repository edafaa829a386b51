/**
 * The local stand-in for API Gateway's HTTP API: a Node HTTP(S) server that turns each
 * request into a payload 2.0 event for the api handler, with API Gateway's limits (10 MB
 * bodies, the integration timeout, Lambda's 6 MB answers), and hands `/_local/...` to the
 * local runtime's own routes. The WebSocket side attaches to `server` (websocket.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { ApiHandler } from '../../functions/api/handler.js';
import { explorerAnswer, isExplorerPath, type ExplorerAssets } from '../../lib/explorer/serve.js';
import { protocolOfEvent } from '../../lib/protocols/dispatch.js';
import { buildExplorer } from '../explorer/build.js';
import {
  errorAnswer,
  eventRefused,
  jsonAnswer,
  lambdaContext,
  maxRequestBodyBytes,
  resultRefused,
  splitTarget,
  toApiGatewayEvent,
  toHttpAnswer,
  type HttpAnswer,
  withinIntegrationTimeout,
} from './http-events.js';
import type { LocalRoutes } from './local-routes.js';
import type { LocalLogger } from './logger.js';
import type { LocalCertificate } from './tls.js';

export interface HttpStandInOptions {
  api: ApiHandler;
  localRoutes: LocalRoutes;
  /** Serve HTTPS with this certificate. */
  certificate: LocalCertificate | null;
  logger: LocalLogger;
  /** How long the api may take before the answer is API Gateway's 503 (INTEGRATION_TIMEOUT_MS by default). */
  integrationTimeoutMs?: number;
}

export class HttpStandIn {
  readonly server: Server;
  /** The port listened on, once `listen` has resolved. */
  port = 0;
  private explorerBuild: Promise<ExplorerAssets> | undefined;

  constructor(private readonly options: HttpStandInOptions) {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      this.handleRequest(req, res).catch((error) => {
        options.logger.error('request failed', error);
        if (!res.headersSent) {
          send(res, errorAnswer(500, 'InternalError', 'the local server failed', randomUUID()));
        } else {
          res.destroy();
        }
      });
    };
    const { certificate } = options;
    this.server = certificate ? createHttpsServer({ key: certificate.key, cert: certificate.cert }, onRequest) : createServer(onRequest);
  }

  /** Listens on `port` (0: a free one) and returns the port. */
  async listen(port: number, host: string): Promise<number> {
    const { server } = this;
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolveListen();
      });
    });
    server.on('error', (error) => this.options.logger.error('HTTP server error', error));
    this.port = (server.address() as AddressInfo).port;
    return this.port;
  }

  /** Closes the server; open keep-alive connections are closed, requests in flight get a moment to finish. */
  close(): Promise<void> {
    const { server } = this;
    return new Promise((resolveClose) => {
      server.close(() => resolveClose());
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), 2_000).unref();
    });
  }

  private async handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    const now = Date.now();
    const body = await readBody(req);
    if (body === 'aborted') return;
    if (body === 'tooLarge') {
      send(res, jsonAnswer(413, { message: 'Request Entity Too Large' }, requestId));
      return;
    }
    const { rawPath } = splitTarget(req.url ?? '/');
    const path = decodedPath(rawPath);
    const method = req.method ?? 'GET';
    if (path === '/_local' || path.startsWith('/_local/')) {
      send(res, await this.options.localRoutes({ method, rawPath, path, authorization: req.headers.authorization, body, requestId }));
      return;
    }
    const event = toApiGatewayEvent(
      { method, url: req.url ?? '/', httpVersion: req.httpVersion, rawHeaders: req.rawHeaders, remoteAddress: req.socket.remoteAddress, body },
      { requestId, now, localPort: this.port },
    );
    // API Gateway says how the client came in; handlers write absolute URLs with it.
    if (this.options.certificate) event.headers['x-forwarded-proto'] = 'https';
    // Sluice Explorer: the page the deployed api function serves, built on first use.
    if (isExplorerPath(path, req.headers.accept) && protocolOfEvent(event) === 'sluice') {
      this.explorerBuild ??= buildExplorer();
      send(res, toHttpAnswer(explorerAnswer(method, path, await this.explorerBuild), requestId));
      return;
    }
    send(res, eventRefused(event, requestId) ?? (await this.invokeApi(event, rawPath, requestId)));
  }

  /** The api handler's answer to `event`, or API Gateway's when the handler fails, runs too long or answers too much. */
  private async invokeApi(event: APIGatewayProxyEventV2, rawPath: string, requestId: string): Promise<HttpAnswer> {
    const { logger } = this.options;
    const context = lambdaContext('sluice-api', { timeoutMs: 29_000 });
    let result: unknown;
    try {
      const outcome = await withinIntegrationTimeout(this.options.api(event, context), requestId, this.options.integrationTimeoutMs);
      if ('timedOut' in outcome) {
        logger.error(`api handler ran past API Gateway's integration timeout on ${event.requestContext.http.method} ${rawPath}`);
        return outcome.timedOut;
      }
      result = outcome.result;
    } catch (error) {
      logger.error(`api handler threw on ${event.requestContext.http.method} ${rawPath}`, error);
      return errorAnswer(500, 'InternalError', 'the handler failed', requestId);
    }
    try {
      const tooLarge = resultRefused(result, requestId);
      if (tooLarge) {
        logger.error(`api handler returned ${tooLarge.size} bytes on ${rawPath}, more than Lambda's 6 MB response limit`);
        return tooLarge;
      }
      return toHttpAnswer(result, requestId);
    } catch (error) {
      logger.error('could not read the api handler result', error);
      return errorAnswer(500, 'InternalError', 'the handler returned an unreadable result', requestId);
    }
  }
}

/** The path decoded for matching, or as sent when it does not decode. */
function decodedPath(rawPath: string): string {
  try {
    return decodeURIComponent(rawPath);
  } catch {
    return rawPath;
  }
}

/** Reads the body, refusing (but draining) anything past API Gateway's own limit. */
function readBody(req: IncomingMessage): Promise<Buffer | 'tooLarge' | 'aborted'> {
  return new Promise((resolveBody) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(req.headers['content-length'] ?? 0) > maxRequestBodyBytes;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxRequestBodyBytes) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on('end', () => resolveBody(tooLarge ? 'tooLarge' : Buffer.concat(chunks, size)));
    req.on('error', () => resolveBody('aborted'));
    // After 'end' this changes nothing; before it, the client went away.
    req.on('close', () => resolveBody('aborted'));
  });
}

function send(res: ServerResponse, answer: HttpAnswer): void {
  if (res.destroyed) return;
  res.writeHead(answer.statusCode, { ...answer.headers, 'content-length': answer.body.length });
  res.end(answer.body);
}
