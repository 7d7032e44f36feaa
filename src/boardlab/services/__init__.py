"""The vehicle-services study: launching the service roles of boardlab-kern and sweeping load over them."""
