import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { Histogram, Registry } from 'prom-client';
import { requestRoute } from '../core/http/request-route.js';

/** Request durations by route pattern and status; the raw path would give a series per id. */
@Injectable()
export class HttpMetrics {
  private readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor(registry: Registry) {
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Duration of HTTP requests to the api, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    });
  }

  readonly middleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
    const end = this.duration.startTimer();
    res.once('finish', () => end({ method: req.method, route: requestRoute(req), status: res.statusCode }));
    next();
  };
}
