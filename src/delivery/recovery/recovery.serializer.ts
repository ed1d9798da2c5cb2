import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { RECOVERY_STATUSES, type RecoveryEntity } from './recovery.entity.js';

@ApiSchema({ name: 'Recovery' })
export class RecoveryResponse {
  @ApiProperty()
  id: string;

  @ApiProperty()
  webhookId: string;

  @ApiProperty({ format: 'date-time' })
  since: string;

  @ApiProperty({ format: 'date-time' })
  until: string;

  @ApiProperty({ enum: RECOVERY_STATUSES })
  status: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Failed or skipped deliveries in [since, until) when the recovery was created',
  })
  matched: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'Deliveries sent again so far; at most matched (one that changed since the recovery was made is left out)',
  })
  requeued: number;

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true })
  completedAt: string | null;
}

@ApiSchema({ name: 'RecoveryDryRun' })
export class RecoveryDryRunResponse {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Deliveries a recovery would send again' })
  matched: number;
}

export const serializeRecovery = (r: RecoveryEntity): RecoveryResponse => ({
  id: r.id,
  webhookId: r.webhookId,
  since: r.since.toISOString(),
  until: r.until.toISOString(),
  status: r.status,
  matched: r.matched,
  requeued: r.requeued,
  createdAt: r.createdAt.toISOString(),
  completedAt: r.completedAt ? r.completedAt.toISOString() : null,
});
