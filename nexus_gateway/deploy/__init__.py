"""What runs beside the gateway in a deployment: the load balancer\x27s config (haproxy.py)."""
