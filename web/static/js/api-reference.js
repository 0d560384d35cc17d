// The interactive API reference (/api/reference): Swagger UI, vendored under
// /static/vendor/swagger-ui (no CDN), rendering the public API document. "Try it out"
// sends real requests from this origin, with the shopper's own session cookie.
/* global SwaggerUIBundle */
SwaggerUIBundle({
  url: "/api/reference/openapi.json",
  dom_id: "#api-reference",
  deepLinking: true,
  tryItOutEnabled: false,
  defaultModelsExpandDepth: 0,
});
