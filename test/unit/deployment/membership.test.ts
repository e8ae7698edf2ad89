/**
 * What the table decides for a process (src/deployment/membership.ts), pure parts: where a process
 * must refuse to take part in the table's deployment affinity (the same words doctor prints), and
 * the warning for a variable that disagrees with the table. No emulator.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { fleetProblem, variableDisagreement } from '../../../src/deployment/membership.js';
import type { TableFormat } from '../../../src/preflight/format-check.js';
import { AFFINITY_MIN_READER } from '../../../src/schema/formats.js';

const config = (env: Record<string, string> = {}) =>
  loadConfig({ AWS_REGION: 'us-east-1', EVE_WORLD_AWS_TABLE: 'tab1', ...env });
const table = (affinity: boolean, minReader = AFFINITY_MIN_READER): TableFormat => ({
  recorded: true,
  formats: { log: 2, records: 2, messages: 2 },
  minReader,
  affinity,
});

describe('fleetProblem', () => {
  it('none on a table without affinity, whatever the process', () => {
    expect(
      fleetProblem(config({ AWS_LAMBDA_FUNCTION_NAME: 'h', AWS_LAMBDA_FUNCTION_VERSION: '$LATEST' }), table(false)),
    ).toBe(undefined);
  });

  it('a plain Node process and a published Lambda version take part', () => {
    expect(fleetProblem(config(), table(true))).toBeUndefined();
    expect(fleetProblem(config({ AWS_LAMBDA_FUNCTION_NAME: 'h', AWS_LAMBDA_FUNCTION_VERSION: '4' }), table(true))).toBe(
      undefined,
    );
  });

  it('refuses $LATEST and a set id in Lambda, and a table that admits readers older than affinity', () => {
    expect(
      fleetProblem(config({ AWS_LAMBDA_FUNCTION_NAME: 'h', AWS_LAMBDA_FUNCTION_VERSION: '$LATEST' }), table(true)),
    ).toMatch(/AWS_LAMBDA_FUNCTION_VERSION is \$LATEST, .*serve a published version/);
    expect(
      fleetProblem(
        config({ AWS_LAMBDA_FUNCTION_NAME: 'h', AWS_LAMBDA_FUNCTION_VERSION: '4', EVE_WORLD_AWS_DEPLOYMENT_ID: 'x' }),
        table(true),
      ),
    ).toMatch(/EVE_WORLD_AWS_DEPLOYMENT_ID is set, .*leave it unset/);
    expect(fleetProblem(config(), table(true, 1))).toMatch(
      /table tab1 pins runs to their deployment but still allows readers from format 1.*init --deployment-affinity/,
    );
    // A client (the CLI) is no deployment: only the table's own problem applies to it.
    expect(
      fleetProblem(
        config({ AWS_LAMBDA_FUNCTION_NAME: 'h', AWS_LAMBDA_FUNCTION_VERSION: '$LATEST' }),
        table(true),
        'client',
      ),
    ).toBeUndefined();
    expect(fleetProblem(config(), table(true, 1), 'client')).toMatch(/still allows readers from format 1/);
  });
});

describe('variableDisagreement', () => {
  it('names `on` on a table without affinity and `off` on one with it; silent when they agree or it is unset', () => {
    expect(variableDisagreement(config({ EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' }), table(false))).toMatch(
      /EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=on is ignored: table tab1 does not pin runs .*init --deployment-affinity/,
    );
    expect(variableDisagreement(config({ EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'off' }), table(true))).toMatch(
      /EVE_WORLD_AWS_DEPLOYMENT_AFFINITY=off is ignored: table tab1 pins runs .*this process takes part/,
    );
    expect(variableDisagreement(config({ EVE_WORLD_AWS_DEPLOYMENT_AFFINITY: 'on' }), table(true))).toBeUndefined();
    expect(variableDisagreement(config(), table(true))).toBeUndefined();
    expect(variableDisagreement(config(), table(false))).toBeUndefined();
  });
});
