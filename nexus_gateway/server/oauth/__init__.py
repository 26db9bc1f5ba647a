"""The gateway as an OAuth 2.1 resource server (MCP authorization, RFC 9728, RFC 6750, RFC 9068).

    remote agent --(no token)--> 401 WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/...", scope=...
                 --GET /.well-known/oauth-protected-resource[/p/NAME/mcp]--> {resource, authorization_servers, ...}
                 --(signs in at the authorization server, RFC 8707 resource = that resource)--> JWT access token
                 --Authorization: Bearer JWT--> GuardMiddleware --> ResourceServer.authenticate --> Grant
                                                                     (TokenVerifier: verifier.py + _jwks.py)

A token is accepted when its signature verifies with a key the issuer publishes, `iss` is the configured
issuer, `aud` names this gateway (or, on `/p/NAME/...`, that profile's resource), it has not expired
(`leeway` seconds of skew) and it carries every required scope. Refusals follow RFC 6750: 401
`invalid_token` (bad signature, wrong issuer or audience, expired, malformed), 403 `insufficient_scope`
with the scopes needed, and 503 when the issuer's keys cannot be fetched (fail closed: a token that
cannot be checked is never let through). Claims choose a profile (`nexus.oauth.profiles`). The token
itself is never kept nor logged: the request carries only its principal (`AccessToken(token="")`).
"""

from nexus_gateway.server.oauth.resource import Grant, ResourceServer
from nexus_gateway.server.oauth.verifier import JwtVerifier, TokenRejected, TokenVerifier, VerifierUnavailable

__all__ = ["Grant", "JwtVerifier", "ResourceServer", "TokenRejected", "TokenVerifier", "VerifierUnavailable"]
