/** The credential schemes a route can accept (RFC 7617 Basic, RFC 6750 Bearer). */
export type AuthScheme = 'basic' | 'bearer';
