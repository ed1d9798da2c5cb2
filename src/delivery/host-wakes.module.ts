import { Module } from '@nestjs/common';
import { QueueConnectionModule } from '../core/redis/queue-connection.module.js';
import { HostStates } from './host-state.js';
import { HostWakes } from './host-wakes.js';

/** The hosts' wakes, shared by the api, the worker and the CLI; and the hosts' admission state to read. */
@Module({
  imports: [QueueConnectionModule],
  providers: [HostWakes, HostStates],
  exports: [HostWakes, HostStates],
})
export class HostWakesModule {}
