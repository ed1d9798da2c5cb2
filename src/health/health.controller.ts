import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Response } from 'express';
import { Public } from '../auth/public.decorator.js';
import { RedisHealthIndicator } from './redis.health.js';

const CHECK_TIMEOUT_MS = 1_500;

/** Probes for orchestrators, outside /api/v1 and without an API key. */
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly postgres: TypeOrmHealthIndicator,
    private readonly redis: RedisHealthIndicator,
  ) {}

  /** Liveness: the process runs and answers HTTP; dependencies are not its concern. */
  @Get('healthz')
  @HealthCheck()
  liveness() {
    return this.health.check([]);
  }

  /** Readiness: Postgres and Redis answer; 503 with the failing ones named otherwise. */
  @Get('readyz')
  @HealthCheck()
  async readiness(@Res({ passthrough: true }) res: Response) {
    try {
      return await this.health.check([
        () => this.postgres.pingCheck('postgres').withTimeout(CHECK_TIMEOUT_MS),
        () => this.redis.pingCheck('redis', CHECK_TIMEOUT_MS),
      ]);
    } catch (error) {
      // Terminus's own body (which check failed, and why) rather than the generic error shape.
      if (!(error instanceof ServiceUnavailableException)) throw error;
      res.status(503);
      return error.getResponse();
    }
  }
}
