/**
 * The platform's icon (a speech bubble with a sound wave, in the widget demo's teal), for the
 * pages a browser shows: the API reference (`/api/v1/docs`) and the local runtime's `/demo`.
 * Pages link it inline (`FAVICON_LINK`), so it costs no request and passes a strict
 * Content-Security-Policy (`img-src data:`); the local runtime also answers `/favicon.ico` with it.
 */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
  '<path fill="#0f766e" d="M6 3h20a4 4 0 0 1 4 4v13a4 4 0 0 1-4 4H14l-7 6v-6H6a4 4 0 0 1-4-4V7a4 4 0 0 1 4-4z"/>' +
  '<path stroke="#fff" stroke-width="2.5" stroke-linecap="round" d="M10 11v5M14 8v11M18 10v7M22 12v3"/></svg>';

/** The `<link rel="icon">` of a page, the icon inline as a data: URL. */
export const FAVICON_LINK = `<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,${encodeURIComponent(FAVICON_SVG)}">`;
