import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorBody } from '../http/api-error.js';

// What Node answers itself, before any middleware: same statuses, but the API's error body instead of none.
const ANSWERS: Record<string, [number, string, ErrorBody['error']]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    { code: 'payload_too_large', message: 'Request line and headers exceed the size limit' },
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', { code: 'bad_request', message: 'Request not completed in time' }],
};
const MALFORMED: [number, string, ErrorBody['error']] = [
  400,
  'Bad Request',
  { code: 'bad_request', message: 'Malformed HTTP request' },
];

/** Requests Node's HTTP parser refuses get the documented JSON error body too, then the connection closes. */
export function answerMalformedRequests(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, body] = ANSWERS[error.code ?? ''] ?? MALFORMED;
    const json = JSON.stringify({ error: body });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(json)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${json}`,
    );
  });
}
