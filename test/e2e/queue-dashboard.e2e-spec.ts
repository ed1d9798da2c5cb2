import { ConfigError, loadConfig } from '../../src/core/config/config.js';
import { createTestApp, type TestApp } from '../support/test-app.js';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('queue dashboard (/admin/queues)', () => {
  describe('without ADMIN_USER and ADMIN_PASSWORD', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(() => t.close());

    it('is not mounted: 404, with or without credentials', async () => {
      const res = await t.http().get('/admin/queues').expect(404);
      expect(res.body.error.code).toBe('not_found');
      await t.http().get('/admin/queues').set('authorization', basic('admin', '')).expect(404);
    });
  });

  describe('with ADMIN_USER and ADMIN_PASSWORD', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse battery' });
    });
    afterAll(() => t.close());

    it('asks for credentials with 401 and a Basic challenge', async () => {
      const res = await t.http().get('/admin/queues').expect(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
      expect(res.body.error.code).toBe('not_authenticated');
    });

    it('refuses a wrong password, a wrong user and a malformed header with 401', async () => {
      await t.http().get('/admin/queues').set('authorization', basic('ops', 'wrong')).expect(401);
      await t.http().get('/admin/queues').set('authorization', basic('root', 'correct horse battery')).expect(401);
      await t.http().get('/admin/queues').set('authorization', 'Basic !!!').expect(401);
      await t.http().get('/admin/queues').set('authorization', 'Bearer correct horse battery').expect(401);
    });

    it('refuses the API key in place of dashboard credentials', async () => {
      await t.http().get('/admin/queues/api/queues').set('x-ac-api-key', 'anything').expect(401);
    });

    it('serves the dashboard with the right credentials', async () => {
      const auth = basic('ops', 'correct horse battery');
      const page = await t.http().get('/admin/queues').set('authorization', auth).expect(200);
      expect(page.headers['content-type']).toMatch(/text\/html/);
      const queues = await t.http().get('/admin/queues/api/queues').set('authorization', auth).expect(200);
      expect(queues.body.queues.map((q: { name: string }) => q.name)).toEqual(['deliveries', 'maintenance']);
    });
  });

  it('stops at start when only one of ADMIN_USER and ADMIN_PASSWORD is set', () => {
    expect(() => loadConfig({ ADMIN_USER: 'ops' })).toThrow(ConfigError);
    expect(() => loadConfig({ ADMIN_PASSWORD: 'secret' })).toThrow(/ADMIN_USER/);
  });
});
