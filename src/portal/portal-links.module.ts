import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PortalLinkEntity } from './portal-link.entity.js';
import { PortalLinks } from './portal-links.js';

/** The portal links' store, for the auth guard (sessions) and the portal routes; apart so auth needs no controllers. */
@Module({
  imports: [TypeOrmModule.forFeature([PortalLinkEntity])],
  providers: [PortalLinks],
  exports: [PortalLinks],
})
export class PortalLinksModule {}
