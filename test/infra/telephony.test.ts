import { AwsSolutionsChecks } from 'cdk-nag';
import { operations } from '../../shared/http/registry';
import { actionsOf, synth, type Synthesized } from './synth';

function functionOf(s: Synthesized, method: string, path: string) {
  const fn = s.resources('AWS::Lambda::Function').find((f) => String(f.Properties.Description).startsWith(`${method} ${path}: `));
  if (!fn) throw new Error(`no function for ${method} ${path}`);
  return fn;
}

/** Whether the function may read the carrier's secret (created here, or an existing one by name). */
const readsSecret = (s: Synthesized, fn: ReturnType<typeof functionOf>) =>
  s.statementsOf(fn).some((st) => actionsOf(st).includes('secretsmanager:GetSecretValue') && /TwilioCredentials|vap\/twilio/.test(JSON.stringify(st.Resource)));
const twilioSecrets = (s: Synthesized) => s.resources('AWS::SecretsManager::Secret').filter((r) => String(r.Properties.Description).startsWith('Twilio credentials'));

describe('the carrier credentials', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth();
  });

  it('keeps the Twilio credentials in a retained Secrets Manager secret', () => {
    const secrets = twilioSecrets(s);
    expect(secrets).toHaveLength(1);
    expect(secrets[0].DeletionPolicy).toBe('Retain');
  });

  it('lets only the operations that talk to the carrier read it, and tells them the provider', () => {
    const telephony = operations.filter((op) => op.access.telephony);
    expect(telephony.map((op) => op.operationId).sort()).toEqual(['buyPhoneNumber', 'getTwilioCallInstructions', 'getTwilioHoldInstructions', 'listAvailablePhoneNumbers', 'receiveTwilioInboundCall', 'receiveTwilioRecording', 'receiveTwilioRelayAction', 'receiveTwilioStatus', 'receiveTwilioTransferAnswer', 'receiveTwilioTransferConference', 'receiveTwilioTransferGather', 'receiveTwilioTransferStatus', 'releasePhoneNumber']);
    for (const op of operations) {
      const fn = functionOf(s, op.method, op.path);
      expect([op.operationId, readsSecret(s, fn)]).toEqual([op.operationId, !!op.access.telephony]);
      if (op.access.telephony) {
        expect(fn.Properties.Environment.Variables.TELEPHONY_PROVIDER).toBe('simulated');
        expect(fn.Properties.Environment.Variables.TWILIO_SECRET_ARN).toBeDefined();
      } else {
        expect(fn.Properties.Environment.Variables.TWILIO_SECRET_ARN).toBeUndefined();
      }
    }
  });

  it('gives the operations that touch sip_password the secrets key, and no others of the area', () => {
    for (const op of operations.filter((o) => o.tag === 'Phone numbers')) {
      const fn = functionOf(s, op.method, op.path);
      const kms = s.statementsOf(fn).some((st) => actionsOf(st).includes('kms:Decrypt'));
      expect([op.operationId, kms]).toEqual([op.operationId, !!op.access.secrets]);
    }
  });

  it('switches to Twilio with an existing secret by name', () => {
    const twilio = synth({ telephony: { provider: 'twilio', twilioSecretName: 'vap/twilio' } });
    expect(twilioSecrets(twilio)).toHaveLength(0);
    const fn = functionOf(twilio, 'POST', '/api/v1/phone-numbers/buy');
    expect(fn.Properties.Environment.Variables.TELEPHONY_PROVIDER).toBe('twilio');
    expect(readsSecret(twilio, fn)).toBe(true);
    const report = new AwsSolutionsChecks(twilio.app).validateScope(twilio.stack);
    expect(report.violations.filter((v) => v.severity === 'error').map((v) => v.ruleName)).toEqual([]);
  });
});
