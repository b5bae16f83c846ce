/**
 * Black-box: monthly renewal billing through the local runtime. The platform runs in this
 * process, so the renewal job's domain function is called directly with a clock a month ahead.
 */
import { monthsAfter, runRenewals } from '../../shared/domain/billing/renewals';
import { usePlatform } from '../support/platform';

const local = usePlatform();
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

describe('billing', () => {
  it('charges a bought number its monthly renewal once, and nothing after release', async () => {
    // Prepare
    const listed = await api('GET', '/api/v1/phone-numbers/available?area_code=512&limit=1');
    const [choice] = listed.body.data;
    const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } });
    expect(bought.status).toBe(200);
    const { id, purchased_at: purchasedAt, next_renewal_at: nextRenewalAt } = bought.body.data;
    expect(nextRenewalAt).toBe(monthsAfter(purchasedAt, 1));
    // Act
    const renewed = await runRenewals({ now: new Date(nextRenewalAt) });
    // Assess
    expect(renewed).toMatchObject({ charged: 1, failed: 0 });
    const charges = await api('GET', '/api/v1/billing/charges');
    expect(charges.status).toBe(200);
    expect(charges.body.meta.total).toBe(2);
    expect(charges.body.data).toEqual([
      expect.objectContaining({ reason: 'number_purchase', amount: choice.price, resource_id: id, period_start: purchasedAt, period_end: nextRenewalAt }),
      expect.objectContaining({
        reason: 'number_renewal', amount: choice.price, currency: 'USD', resource_type: 'phone_number', resource_id: id,
        phone_number: choice.phone_number, period_start: nextRenewalAt, period_end: monthsAfter(purchasedAt, 2),
      }),
    ]);
    expect((await api('GET', `/api/v1/phone-numbers/${id}`)).body.data.next_renewal_at).toBe(monthsAfter(purchasedAt, 2));

    // Act: released, then the job runs when the next month would have been due
    expect((await api('DELETE', `/api/v1/phone-numbers/${id}`)).status).toBe(200);
    const afterRelease = await runRenewals({ now: new Date(monthsAfter(purchasedAt, 2)) });
    // Assess
    expect(afterRelease).toMatchObject({ found: 0, charged: 0 });
    const after = await api('GET', '/api/v1/billing/charges');
    expect(after.body.meta.total).toBe(2);
    expect((await api('GET', `/api/v1/phone-numbers/${id}`)).body.data).not.toHaveProperty('next_renewal_at');
  });
});
