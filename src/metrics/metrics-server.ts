import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import http from 'node:http';
import { once } from 'node:events';
import { Registry } from 'prom-client';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';

/** GET /metrics of this process (api or worker) on METRICS_PORT (0 = off), off the public API port. */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('MetricsServer');
  private server?: http.Server;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: Registry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.metricsPort === 0) return;
    this.server = http.createServer((req, res) => void this.answer(req, res));
    this.server.listen(this.config.metricsPort);
    try {
      await once(this.server, 'listening');
    } catch (error) {
      if ((error as { code?: string }).code !== 'EADDRINUSE') throw error;
      throw new Error(
        `METRICS_PORT ${this.config.metricsPort} is already in use (another api or worker on this host?): ` +
          'give each process its own METRICS_PORT, or METRICS_PORT=0 to turn its metrics server off',
        { cause: error },
      );
    }
    this.logger.log(`Metrics on http://localhost:${this.config.metricsPort}/metrics`);
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      return;
    }
    try {
      const body = await this.registry.metrics();
      res.writeHead(200, { 'content-type': this.registry.contentType, 'cache-control': 'no-store' }).end(body);
    } catch (error) {
      this.logger.error(`Metrics collection failed: ${(error as Error).message}`);
      res.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics collection failed\n');
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}
