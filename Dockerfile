# nexus-gateway: the gateway and the example servers in one image.
FROM python:3.11-slim

# llama-cpp-python builds from source: a compiler and cmake are needed at build time.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake git \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY nexus_gateway ./nexus_gateway
COPY examples ./examples
COPY compiled_schemas ./compiled_schemas

ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
    PYTHONUNBUFFERED=1
# EXTRAS: the package's extras (docker-compose.yml's cluster profile: "[cluster]"); EXTRA_PACKAGES: more
# packages (the inference server: "llama-cpp-python[server]").
ARG EXTRAS=""
ARG EXTRA_PACKAGES=""
RUN pip install --no-cache-dir ".${EXTRAS}" ${EXTRA_PACKAGES}

EXPOSE 8765
# /healthz takes the bearer token too when tokens are configured: the check sends the first one.
HEALTHCHECK --interval=10s --timeout=3s CMD python -c "import os, urllib.request as u; t = os.environ.get('NEXUS_AUTH_TOKENS', '').split(',')[0].strip(); u.urlopen(u.Request('http://127.0.0.1:8765/healthz', headers={'Authorization': 'Bearer ' + t} if t else {}), timeout=2)" || exit 1
CMD ["nexus-gateway", "serve", "--config", "/app/examples/docker-gateway.json", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]
