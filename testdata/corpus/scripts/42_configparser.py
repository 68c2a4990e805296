import configparser
c = configparser.ConfigParser()
c.read("settings.ini")
print(c["server"]["port"], c.getint("db", "pool"), c.sections())
