/**
 * The registry's fingerprint beside each id (src/deployment/registry.ts) on DynamoDB Local: one
 * id, one build, decided by the conditional UpdateItem itself (races included), idempotent, and
 * a registration without a fingerprint (an id set by hand, no build found) never checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { destroyClients } from '../../../src/aws/clients.js';
import { createContext, type WorldContext } from '../../../src/context/world-context.js';
import {
  DeploymentClashError,
  markRetired,
  readDeployment,
  registerDeployment,
  registerIdentity,
} from '../../../src/deployment/registry.js';
import { createFixture, type Fixture } from '../../helpers/aws.js';

let fixture: Fixture;
let ctx: WorldContext;

beforeAll(async () => {
  fixture = await createFixture({}, 'reg');
  ctx = createContext(fixture.config, fixture.clients);
});
afterAll(() => destroyClients(fixture.clients));

describe('the build fingerprint beside a deployment id', () => {
  it('is stored by the first registration; the same build registers again (idempotent), another is refused', async () => {
    await registerDeployment(ctx, 'release-1', 'node', 1000, 'aaaaaaaaaaaaaaaa');
    await registerDeployment(ctx, 'release-1', 'node', 2000, 'aaaaaaaaaaaaaaaa');
    expect(await readDeployment(ctx, 'release-1', true)).toMatchObject({
      fingerprint: 'aaaaaaaaaaaaaaaa',
      firstSeen: 1000,
      lastSeen: 2000,
      status: 'active',
    });
    const clash = await registerDeployment(ctx, 'release-1', 'node', 3000, 'bbbbbbbbbbbbbbbb').catch((e) => e);
    expect(clash).toBeInstanceOf(DeploymentClashError);
    expect(String(clash.message)).toMatch(
      /^EVE_WORLD_AWS_DEPLOYMENT_ID is release-1, which another build registered on table .* \(build aaaaaaaaaaaaaaaa, first seen 1970-01-01T00:00:01\.000Z\); this process runs build bbbbbbbbbbbbbbbb\. .* Example: EVE_WORLD_AWS_DEPLOYMENT_ID=release-1-bbbbbbbb$/,
    );
    // The refused build changed nothing: not its fingerprint, not lastSeen.
    expect(await readDeployment(ctx, 'release-1', true)).toMatchObject({
      fingerprint: 'aaaaaaaaaaaaaaaa',
      lastSeen: 2000,
    });
  });

  it('two builds registering one id at once: one build wins, each registration of the other is refused', async () => {
    const outcomes = await Promise.allSettled(
      ['cccccccccccccccc', 'dddddddddddddddd', 'cccccccccccccccc', 'dddddddddddddddd'].map((fp) =>
        registerDeployment(ctx, 'release-2', 'node', Date.now(), fp),
      ),
    );
    const stored = (await readDeployment(ctx, 'release-2', true))?.fingerprint;
    expect(['cccccccccccccccc', 'dddddddddddddddd']).toContain(stored);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).toHaveLength(2);
    for (const o of refused) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(DeploymentClashError);
  });

  it('without a fingerprint: registered and refreshed unchecked; a later build stores its own; retired stays retired', async () => {
    await registerDeployment(ctx, 'release-3', 'node', 1000);
    expect((await readDeployment(ctx, 'release-3', true))?.fingerprint).toBeUndefined();
    await registerDeployment(ctx, 'release-3', 'node', 2000, 'eeeeeeeeeeeeeeee');
    await registerDeployment(ctx, 'release-3', 'node', 3000);
    expect(await readDeployment(ctx, 'release-3', true)).toMatchObject({
      fingerprint: 'eeeeeeeeeeeeeeee',
      lastSeen: 3000,
    });
    await markRetired(ctx, 'release-3', 'test', 4000);
    await registerDeployment(ctx, 'release-3', 'node', 5000, 'eeeeeeeeeeeeeeee');
    expect((await readDeployment(ctx, 'release-3', true))?.status).toBe('retired');
  });

  it('registerIdentity: the id and fingerprint of the identity; a missing one is said once', async () => {
    const lines: string[] = [];
    const identity = {
      affinity: true,
      shape: 'node' as const,
      id: async () => 'release-4',
      fingerprint: async () => ({ note: 'no .well-known/workflow/v1/manifest.json above /srv' }),
    };
    await registerIdentity(ctx, identity, (l) => lines.push(l), 1000);
    await registerIdentity(ctx, identity, (l) => lines.push(l), 2000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[eve-world-aws\] deployment release-4 is registered without a build fingerprint: no \.well-known\/workflow\/v1\/manifest\.json above \/srv\. A second build given the same EVE_WORLD_AWS_DEPLOYMENT_ID cannot be told apart/,
    );
    expect(await readDeployment(ctx, 'release-4', true)).toMatchObject({ lastSeen: 2000 });
  });
});
