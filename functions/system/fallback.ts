import { fallback } from '../../shared/http/fallback';

export const handler = fallback();
