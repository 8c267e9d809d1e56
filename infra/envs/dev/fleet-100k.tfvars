# The fleet docs/capacity.md sizes for 100,000 concurrent recordings, as overrides of the dev
# environment: terraform plan -var-file=fleet-100k.tfvars. 226 live instances of 1 vCPU (Cloud
# Run's 1,000 connections per instance bind first), each with a pool of 10: 3,064 connections at
# the instance limits, more than the 1,000 of the largest tier, so managed connection pooling
# (Enterprise Plus) bounds what reaches PostgreSQL: 32 poolers x 3 users x 10 = 960.
db_tier              = "db-perf-optimized-N-128"
db_availability_type = "REGIONAL"
db_max_connections   = 1000
db_pooling           = { enabled = true, max_pool_size = 10 }
db_pool_max          = { api = 8, sweep = 2, live = 10 }
api_max_instances    = 100
live_min_instances   = 23
live_max_instances   = 226
live_cpu             = 1
