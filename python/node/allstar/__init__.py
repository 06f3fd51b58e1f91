"""AllStarLink network services: HTTP registration and status posts."""
