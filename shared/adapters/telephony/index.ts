import { checkTelephony } from '../../access/enforce';
import type { TelephonyPort, TelephonyProviderName } from './port';
import { simulatedCarrier } from './simulated';
import { twilioCarrier } from './twilio';

export type * from './port';

let port: TelephonyPort | undefined;

/**
 * This process's carrier: TELEPHONY_PROVIDER `simulated` (default) or `twilio`. Deployed, only
 * `telephony` functions get the provider and its credentials, so any other caller is refused.
 */
export function telephony(): TelephonyPort {
  if (port) return port;
  const name = (process.env.TELEPHONY_PROVIDER || 'simulated') as TelephonyProviderName;
  let carrier: TelephonyPort;
  if (name === 'simulated') carrier = simulatedCarrier();
  else if (name === 'twilio') carrier = twilioCarrier();
  else throw new Error(`TELEPHONY_PROVIDER must be "simulated" or "twilio", got "${name}".`);
  port = guarded(carrier);
  return port;
}

/**
 * The carrier with every call checked against the current function's grants. Reading a status
 * event the carrier posted is plain parsing (no credentials), and a placed call's course again is
 * plain computation, so neither is checked (and both stay synchronous).
 */
function guarded(carrier: TelephonyPort): TelephonyPort {
  return new Proxy(carrier, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || property === 'parseStatusEvent' || property === 'courseOf') return value;
      return async (...args: unknown[]) => {
        checkTelephony(String(property));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** Forget the carrier (tests that change the environment). */
export function resetTelephony(): void {
  port = undefined;
}
