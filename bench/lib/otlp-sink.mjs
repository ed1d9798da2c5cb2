// A local OTLP/HTTP trace sink for the tracing phase: answers every export at once and counts what came,
// without parsing it (the bench process should cost the machine as little as the receiver does).
import { once } from 'node:events';
import http from 'node:http';

export class OtlpSink {
  constructor() {
    this.exports = 0;
    this.bytes = 0;
    this.server = http.createServer((req, res) => {
      req.on('data', (chunk) => (this.bytes += chunk.length));
      req.on('end', () => {
        this.exports += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
  }

  async listen() {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return this;
  }

  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  get url() {
    return `http://127.0.0.1:${this.server.address().port}`;
  }

  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
