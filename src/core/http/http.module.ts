import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, APP_PIPE, DiscoveryModule } from '@nestjs/core';
import { HttpExceptionFilter } from './http-exception.filter.js';
import { JsonBodyInterceptor } from './json-body.interceptor.js';
import { RouteMethods } from './route-methods.js';
import { createValidationPipe } from './validation.js';

/** The request pipeline every route shares: errors, body reading and validation. */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    RouteMethods,
    { provide: APP_FILTER, useClass: HttpExceptionFilter },
    { provide: APP_INTERCEPTOR, useClass: JsonBodyInterceptor },
    { provide: APP_PIPE, useFactory: createValidationPipe },
  ],
  exports: [RouteMethods],
})
export class HttpPipelineModule {}
