import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One exported span, flattened from OTLP/JSON: ids in hex, attributes as plain values. */
export interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpRequest {
  resourceSpans: {
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: { spans: (Omit<CollectedSpan, 'service' | 'attributes'> & { attributes?: OtlpAttribute[] })[] }[];
  }[];
}

const valueOf = (v: OtlpValue): unknown => v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue;
const attributesOf = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** A local OTLP/HTTP (JSON) trace receiver: what the processes' real exporter sends, collected as spans. */
export class OtlpCollector {
  readonly spans: CollectedSpan[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      if (req.url === '/v1/traces') this.collect(JSON.parse(body.toString('utf8')) as OtlpRequest);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  static async start(): Promise<OtlpCollector> {
    const collector = new OtlpCollector();
    await new Promise<void>((resolve) => collector.server.listen(0, '127.0.0.1', resolve));
    return collector;
  }

  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private collect(request: OtlpRequest): void {
    for (const { resource, scopeSpans } of request.resourceSpans) {
      const service = String(attributesOf(resource.attributes)['service.name']);
      for (const { spans } of scopeSpans) {
        for (const span of spans) {
          const { traceId, spanId, parentSpanId, name, kind } = span;
          this.spans.push({
            service,
            traceId,
            spanId,
            parentSpanId: parentSpanId ?? '',
            name,
            kind,
            attributes: attributesOf(span.attributes),
          });
        }
      }
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
