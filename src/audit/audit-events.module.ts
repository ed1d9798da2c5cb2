import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEventEntity } from './audit-event.entity.js';
import { AuditEvents } from './audit-events.js';
import { AuditInterceptor } from './audited.js';

/**
 * The audit log's store, for the routes that record events and for the worker's retention run; apart from
 * AuditModule so the worker loads nothing of the HTTP API.
 */
@Module({
  imports: [TypeOrmModule.forFeature([AuditEventEntity])],
  providers: [AuditEvents, AuditInterceptor],
  exports: [AuditEvents, AuditInterceptor],
})
export class AuditEventsModule {}
