import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Registry } from 'prom-client';
import { Public } from '../auth/public.decorator.js';

/** Prometheus scrape endpoint of the api, outside /api/v1 and without an API key. */
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly registry: Registry) {}

  @Get()
  async scrape(@Res() res: Response): Promise<void> {
    const body = await this.registry.metrics();
    res.set('Cache-Control', 'no-store').type(this.registry.contentType).send(body);
  }
}
