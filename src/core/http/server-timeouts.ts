import type { Server } from 'node:http';
import type { AppConfig } from '../config/config.js';

/**
 * Bounds what a slow client can hold (slowloris, a body trickled a byte at a time): Node cuts a request
 * whose headers or whole request are late with a 408 (answerMalformedRequests gives it the JSON body), and
 * an idle kept-alive connection after keepAliveTimeout. Call before listen: Node starts the timer that
 * checks requests when the server starts listening, with the interval set then.
 */
export function applyServerTimeouts(server: Server, { httpTimeouts }: AppConfig): void {
  server.headersTimeout = httpTimeouts.headersMs;
  server.requestTimeout = httpTimeouts.requestMs;
  server.keepAliveTimeout = httpTimeouts.keepAliveMs;
  // Late requests are found by a sweep every connectionsCheckingInterval (Node's default 30 s, on top of
  // the timeout): here a quarter of the headers timeout, at most 1 s. A createServer option, which Node
  // reads from the server when it starts listening; not in Node's typings as a property.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    1000,
    Math.max(25, Math.floor(httpTimeouts.headersMs / 4)),
  );
}
